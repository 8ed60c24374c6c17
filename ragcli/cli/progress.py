"""A rich progress bar on a terminal; nothing at all in a pipe."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
    TimeRemainingColumn


class BarProgress:
    """Adapts the library's progress protocol (start / advance) to a rich bar."""

    def __init__(self, progress: Progress, description: str) -> None:
        self._progress = progress
        self._task = progress.add_task(description, total=None, status="")

    def start(self, total: int) -> None:
        self._progress.update(self._task, total=total)

    def advance(self, path: str, status: str) -> None:
        name = path.rsplit("/", 1)[-1]
        self._progress.update(self._task, advance=1, status=f"{status}: {name}"[:60])


@contextmanager
def progress_bar(console: Console, description: str, enabled: bool = True) -> Iterator[BarProgress | None]:
    """Yield a progress receiver when stderr really is a terminal (not merely forced to colour)."""
    import sys

    if not (enabled and sys.stderr.isatty() and not console.quiet):
        yield None
        return
    columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
               TextColumn("{task.fields[status]}", style="dim"))
    with Progress(*columns, console=console, transient=True) as progress:
        yield BarProgress(progress, description)


class StepStatus:
    """A spinner line on a terminal naming the step in progress; `say` changes its text."""

    def __init__(self, console: Console, status: object | None) -> None:
        self._console = console
        self._status = status
        self.said: list[str] = []
        self.live = status is not None

    def say(self, message: str) -> None:
        self.said.append(message)
        if self._status is not None:
            self._status.update(message)  # type: ignore[attr-defined]


@contextmanager
def step_status(console: Console, message: str) -> Iterator[StepStatus]:
    """Show `message` with a spinner while a possibly slow step runs (terminal only)."""
    import sys

    if not (sys.stderr.isatty() and not console.quiet):
        yield StepStatus(console, None)
        return
    with console.status(message) as status:
        yield StepStatus(console, status)
