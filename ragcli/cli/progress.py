"""A rich progress bar on a terminal; nothing at all in a pipe.

The bar counts what takes the time: chunks embedded. The total is not known up front (a
file's chunks are known once it is read), so it is estimated from the files read so far,
`chunks queued / files read * files in all`, and refined as reading goes on. The ETA is
the chunks left at the average rate since embedding began (reading included, as it is
interleaved with embedding), not rich's 30-second window, which shows nothing when one
slice takes longer. Until the first batch is embedded the bar shows the files read.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class BarProgress:
    """Adapts the library's progress protocol (start / advance / embedding / embedded) to a bar."""

    def __init__(self, progress: Progress, description: str) -> None:
        self._progress = progress
        self._task = progress.add_task(description, total=None, status="", eta="-")
        self.files_total = 0
        self.files_read = 0
        self.queued = 0  # chunks handed to the embedder so far
        self.done = 0  # chunks embedded
        self._embedding_started = False
        self._embedding_since = 0.0

    def start(self, total: int) -> None:
        self.files_total = total
        self._progress.update(self._task, total=total or None)

    def advance(self, path: str, status: str) -> None:
        from ragcli.cli.render import printable

        self.files_read += 1
        name = printable(path.rsplit("/", 1)[-1])
        status_text = f"read {self.files_read}/{self.files_total} files; {status}: {name}"[:70]
        if self._embedding_started:  # the estimate moves only when a batch is queued
            self._progress.update(self._task, status=status_text)
        else:
            self._progress.update(self._task, advance=1, status=status_text)

    def embedding(self, count: int) -> None:
        """`count` more chunks are about to be embedded."""
        self.queued += count
        if not self._embedding_started:
            self._embedding_started = True
            self._embedding_since = time.monotonic()
            self._progress.reset(self._task, total=self._estimate(), completed=0)
            self._progress.update(self._task, description="embedding chunks")
        else:
            self._progress.update(self._task, total=self._estimate())

    def embedded(self, count: int) -> None:
        self.done += count
        self._progress.update(self._task, advance=count, eta=self._eta())

    def _eta(self) -> str:
        elapsed = time.monotonic() - self._embedding_since
        if not self.done or elapsed <= 0:
            return "-"
        seconds = int(max(self._estimate() - self.done, 0) * elapsed / self.done)
        return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

    def _estimate(self) -> int:
        if not self.files_read:
            return self.queued
        projected = self.queued * self.files_total / self.files_read
        return max(int(projected), self.queued, self.done)


@contextmanager
def progress_bar(console: Console, description: str, enabled: bool = True) -> Iterator[BarProgress | None]:
    """Yield a progress receiver when stderr really is a terminal (not merely forced to colour)."""
    import sys

    if not (enabled and sys.stderr.isatty() and not console.quiet):
        yield None
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta {task.fields[eta]}"),
        TextColumn("{task.fields[status]}", style="dim", markup=False),
    )
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
