"""A rich progress bar on a terminal; nothing at all in a pipe.

An ingest has two phases, each with a total known before it starts, so the bar never
guesses: reading (the files are listed and their sizes summed first, which costs a stat
each; the bar counts bytes read of that total, a better measure of time left than files,
and says `files n/N`), then embedding (the chunks committed without a vector are counted
first; the bar counts chunks embedded of that total). The ETA is the rest of the phase at
its average rate so far, shown only once the phase is `STABLE_FRACTION` done and
`STABLE_SECONDS` old: before that a rate is noise (the first batch pays for warm-up).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

STABLE_FRACTION = 0.05
STABLE_SECONDS = 5.0


class BarProgress:
    """Adapts the library's progress protocol to a bar: `start` / `start_bytes` / `advance` /
    `read_bytes` while reading, `embedding_started` / `embedded` while embedding."""

    def __init__(self, progress: Progress, description: str, unit: str = "") -> None:
        self._progress = progress
        self._unit = f" {unit}" if unit else ""
        self._task = progress.add_task(description, total=None, status="", eta="-", count="")
        self.files_total = 0
        self.files_read = 0
        self.bytes_total = 0
        self.bytes_read = 0
        self.embed_total = 0
        self.done = 0  # chunks embedded
        self._phase_since = time.monotonic()

    def start(self, total: int) -> None:
        self.files_total = total
        self._phase_since = time.monotonic()
        self._progress.update(self._task, total=total or None, count=f"0/{total}{self._unit}")

    def start_bytes(self, total: int) -> None:
        """The files' sizes summed: the bar measures bytes read from now on."""
        self.bytes_total = total
        self._progress.update(self._task, total=total or None, completed=0)

    def advance(self, path: str, status: str) -> None:
        from ragcli.cli.render import printable

        self.files_read += 1
        name = printable(path.rsplit("/", 1)[-1])
        fields = {
            "status": f"{status}: {name}"[:50],
            "count": f"{self.files_read}/{self.files_total}{self._unit}",
        }
        if self.bytes_total:
            self._progress.update(self._task, **fields)
        else:
            self._progress.update(self._task, advance=1, **fields)
            self._update_eta(self.files_read, self.files_total)

    def read_bytes(self, count: int) -> None:
        self.bytes_read += count
        self._progress.update(self._task, completed=self.bytes_read)
        self._update_eta(self.bytes_read, self.bytes_total)

    def embedding_started(self, total: int) -> None:
        """`total` chunks are waiting for a vector: the embedding phase begins."""
        self.embed_total, self.done = total, 0
        self._phase_since = time.monotonic()
        self._progress.reset(self._task, total=total, completed=0)
        self._progress.update(
            self._task, description="embedding", status="", eta="-", count=f"0/{total} chunks"
        )

    def embedding(self, count: int) -> None:
        """A store that embeds as it writes (Milvus) says `count` more chunks are coming."""
        if not self.embed_total:
            self.embedding_started(0)
        self.embed_total += count
        self._progress.update(self._task, total=self.embed_total)

    def embedded(self, count: int) -> None:
        self.done += count
        self._progress.update(self._task, advance=count, count=f"{self.done}/{self.embed_total} chunks")
        self._update_eta(self.done, self.embed_total)

    def _update_eta(self, done: int, total: int) -> None:
        self._progress.update(self._task, eta=stable_eta(done, total, time.monotonic() - self._phase_since))


def stable_eta(done: float, total: float, elapsed: float) -> str:
    """`h:mm:ss` left at the phase's average rate, or "-" until that rate means something."""
    if total <= 0 or done <= 0 or done / total < STABLE_FRACTION or elapsed < STABLE_SECONDS:
        return "-"
    seconds = int(max(total - done, 0) * elapsed / done)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@contextmanager
def progress_bar(
    console: Console, description: str, enabled: bool = True, unit: str = ""
) -> Iterator[BarProgress | None]:
    """Yield a progress receiver when stderr really is a terminal (not merely forced to colour)."""
    import sys

    if not (enabled and sys.stderr.isatty() and not console.quiet):
        yield None
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[count]}"),
        TimeElapsedColumn(),
        TextColumn("eta {task.fields[eta]}"),
        TextColumn("{task.fields[status]}", style="dim", markup=False),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        yield BarProgress(progress, description, unit)


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
