"""`rag ingest DIR --watch`: the terminal side of `ragcli.ingest.watch` (signals and one line per change)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import typer

from ragcli.cli.render import stderr_console

if TYPE_CHECKING:
    from ragcli.ingest.watch import WatchBatch


def run_watch(changes: Callable[[threading.Event], Iterator[WatchBatch]], roots: Sequence[Path]) -> None:
    """Watch until Ctrl-C, printing one line per changed document on stderr; then exit 130.

    `changes(stop)` yields the batches (`ragcli.index.Index.watch`). The first Ctrl-C lets
    the set of changes being applied commit and runs a last catch-up; a second
    one interrupts at once (what was committed stays).
    """
    stop = threading.Event()

    def interrupt(signum, frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, interrupt)
    err = stderr_console()
    try:
        for batch in changes(stop):
            for change in batch.changes:
                err.print(change_line(change), markup=False, highlight=False, soft_wrap=True)
            if batch.kind == "initial":
                report = batch.report
                documents = report.added + report.updated + report.unchanged
                folders = ", ".join(str(Path(root).resolve()) for root in roots)
                err.print(
                    f"watching {folders} ({documents} documents; Ctrl-C to stop)",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
    finally:
        signal.signal(signal.SIGINT, previous)
    if stop.is_set():
        err.print("stopped; everything seen is committed", markup=False, highlight=False)
        raise typer.Exit(130)


def change_line(change) -> str:
    """`added PATH`, `updated PATH`, `removed PATH`, `failed PATH: reason`, or a watched
    folder `missing` or `back`."""
    if change.status == "missing":
        return (
            f"missing {change.path}: moved, deleted or unmounted; its documents are kept, "
            "and it is watched again once it is back"
        )
    if change.status == "back":
        return f"back {change.path}: reading what changed, then watching it again"
    if change.status != "failed":
        return f"{change.status} {change.path}"
    reason = change.reason if change.path in change.reason else f"{change.path}: {change.reason}"
    return f"failed {reason}"
