"""Keeping an index current while files change: the loop behind `rag ingest DIR --watch`.

1. **Catch up**: one ordinary `ingest` of the roots (only files changed since the last run
   are read; files deleted meanwhile are pruned).
2. **Watch**: `watchfiles` (inotify / FSEvents / ReadDirectoryChangesW through the Rust
   `notify` crate) reports changes; once it is armed, one more catch-up picks up what changed
   while it was being set up. It groups them: a set is handed over once no new change
   came for `step` ms, or after `debounce` ms of continuous changes, so an editor's
   write-to-temp-then-rename save or a `git checkout` of a thousand files arrives as one or a
   few sets, not as one ingest per event.
3. **Apply** each set with `ragcli.ingest.changes.ingest_changes`: changed files are re-read only
   when their content hash changed, only new chunk texts are embedded, and deleted or
   renamed-away paths are pruned. Each set is one short write: the index is not held open
   (nor its write lock, where the index has one) between sets, so other `rag` processes
   query, and even ingest, while a watcher runs.
4. **Stop** when `stop` is set (the CLI sets it on Ctrl-C): the set being applied is
   finished and committed, then a final catch-up picks up changes that were still being
   grouped, so nothing seen before the stop is lost.

Models are loaded once by the caller and reused for every set.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generator, Iterator, Sequence

from ragcli.choices import DEFAULT_GROUP
from ragcli.embedding.base import Embedder
from ragcli.errors import NotIndexed
from ragcli.ingest.changes import ingest_changes
from ragcli.ingest.pipeline import ingest
from ragcli.ingest.report import IngestReport
from ragcli.types import ChunkSettings
from ragcli.ingest.walk import FileFilter, resolve_roots
from ragcli.store.ownership import is_index

# Quiet time that ends a set of changes, and the longest a set keeps growing (milliseconds).
STEP_MS = 50
DEBOUNCE_MS = 1600
# The notifier hands over an empty set after this long without changes: the first one says it
# is armed (milliseconds).
ARMED_MS = 1000


@dataclass(frozen=True)
class Change:
    """One document the watcher added, updated, removed, or failed to read."""

    path: str
    status: str
    reason: str = ""


@dataclass
class WatchBatch:
    """What applying one set of changes did.

    Attributes:
        kind: "initial" (the catch-up ingest), "changes" (a set the watcher saw) or "final".
        changes: documents added, updated, removed or failed, in order.
        report: the underlying ingest report.
    """

    kind: str
    changes: list[Change] = field(default_factory=list)
    report: IngestReport | None = None


class _Collector:
    """A `Progress` that keeps the statuses worth a line (not "unchanged"/"skipped")."""

    def __init__(self) -> None:
        self.changes: list[Change] = []

    def start(self, total: int) -> None:
        pass

    def advance(self, path: str, status: str) -> None:
        if status in ("added", "updated", "removed"):
            self.changes.append(Change(path, status))


def _batch(kind: str, report: IngestReport, collector: _Collector) -> WatchBatch:
    # A whole ingest's removals (files deleted while no notifier was armed) are in its report.
    pruned = [Change(path, "removed") for path in report.pruned]
    failed = [Change(f.path, "failed", f.reason) for f in report.failed]
    return WatchBatch(kind, collector.changes + pruned + failed, report)


def watch(
    index: Path,
    paths: Sequence[str | Path],
    *,
    embedder: Embedder,
    stop: threading.Event,
    group: str = DEFAULT_GROUP,
    chunking: ChunkSettings | None = None,
    file_filter: FileFilter = FileFilter(),
    batch_chunks: int = 256,
    step_ms: int = STEP_MS,
    debounce_ms: int = DEBOUNCE_MS,
    force_polling: bool | None = None,
) -> Iterator[WatchBatch]:
    """Ingest `paths`, then keep the index in line with them until `stop` is set.

    Args:
        index: the index directory.
        paths: folders (watched recursively) and files.
        embedder: the embedding model, loaded once and used for every set of changes.
        stop: set it (e.g. from a signal handler) to end the watch cleanly.
        group, chunking, file_filter, batch_chunks: as for `ragcli.ingest.pipeline.ingest`.
        step_ms: quiet time that ends a set of changes.
        debounce_ms: longest a set keeps growing while changes keep coming.
        force_polling: poll instead of using OS notifications (network file systems).

    Yields:
        A `WatchBatch` for the catch-up ingest, one per applied set of changes that changed
        something, and one for the final catch-up after `stop`.

    Raises:
        UsageError: a path does not exist; IndexMismatch: the index uses another model.
    """
    import watchfiles

    roots = resolve_roots(paths)
    options = dict(
        embedder=embedder, group=group, chunking=chunking, file_filter=file_filter, batch_chunks=batch_chunks
    )
    from watchfiles._rust_notify import WatchfilesRustInternalError

    yield _full(index, roots, "initial", options)
    watching = dict(stop_event=stop, step=step_ms, debounce=debounce_ms, force_polling=force_polling)
    tracked = _Roots(roots)
    while not stop.is_set():
        yield from tracked.arm()
        present = tracked.present()
        if not present:
            tracked.wait_for_change(stop)
            continue
        try:
            sets = watchfiles.watch(
                *present, raise_interrupt=False, yield_on_timeout=True, rust_timeout=ARMED_MS, **watching
            )
            if not (yield from _apply_changes(sets, index, present, options, stop, tracked)):
                break
        except WatchfilesRustInternalError:
            # The notifier cannot report a path whose name is not UTF-8 ("Unable to decode
            # path") and gives up; a catch-up ingest (which walks such names fine) applies
            # what changed, and watching starts again.
            batch = _full(index, present, "changes", options)
            if batch.changes:
                yield batch
    existing = [root for root in roots if _identity(root) is not None]
    yield _full(index, existing, "final", options) if existing else WatchBatch("final")


class _Roots:
    """The watched roots and the folder or file each one was when the notifier was armed.

    The notifier follows what it was armed on: a folder moved away (or a disk unmounted) is
    still watched where it went, and a new folder made at its path, or a file an editor
    replaced, is not watched at all. So a root gone or replaced ends the notifier, and it is
    armed again on what is at the roots' paths now."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.armed: dict[Path, tuple[int, int] | None] = {root: _identity(root) for root in roots}

    def arm(self) -> Iterator[WatchBatch]:
        """Take what is at each root now; a batch says which roots went missing or came back."""
        before, self.armed = self.armed, {root: _identity(root) for root in self.roots}
        changes = [
            Change(str(root), "missing" if now is None else "back")
            for root, now in self.armed.items()
            if (before[root] is None) != (now is None)
        ]
        if changes:
            yield WatchBatch("changes", changes)

    def present(self) -> list[Path]:
        return [root for root in self.roots if self.armed[root] is not None]

    def changed(self) -> bool:
        """Whether a root is gone, back or replaced since the notifier was armed."""
        return any(_identity(root) != armed for root, armed in self.armed.items())

    def wait_for_change(self, stop: threading.Event) -> None:
        """With no root to watch, look for one to come back every `ARMED_MS` until `stop`."""
        while not stop.wait(ARMED_MS / 1000) and not self.changed():
            pass


def _identity(path: Path) -> tuple[int, int] | None:
    """The file or folder at `path` (device and inode), or None where nothing is."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _apply_changes(
    sets: Iterator, index: Path, roots: list[Path], options: dict, stop: threading.Event, tracked: _Roots
) -> Generator[WatchBatch, None, bool]:
    """Apply each set of changes the notifier reports (`ingest_changes`), until `stop` or
    until a root is gone, back or replaced (`_Roots`): returns whether the notifier must be
    armed again.

    The notifier is armed only once its generator runs, after the catch-up ingest: what
    changed in between is never reported. So its first set (empty when nothing changed for
    `ARMED_MS`) brings one more catch-up ingest, which reads only what changed."""
    armed = False
    for raw in sets:
        if tracked.changed():
            return True
        if not armed:
            armed = True
            batch = _full(index, roots, "changes", options)
        elif raw:
            collector = _Collector()
            paths = [Path(path) for _, path in raw]
            _require_index(index)
            report = ingest_changes(index, roots, paths, progress=collector, **options)
            batch = _batch("changes", report, collector)
        else:
            continue
        if batch.changes:
            yield batch
        if stop.is_set():
            break
    return False


def _full(index: Path, roots: list[Path], kind: str, options: dict) -> WatchBatch:
    if kind != "initial":
        _require_index(index)
    collector = _Collector()
    report = ingest(index, roots, progress=collector, **options)
    return _batch(kind, report, collector)


def _require_index(index: Path) -> None:
    """Stop where the index was deleted while watching: writing the next set of changes would
    make a new index of those files alone, which `rag status` and `rag ls` would show as all.

    An index missing for a moment (another process's `--rebuild` swapping folders) is looked
    for once more before the watch stops.

    Raises:
        NotIndexed: the index folder is gone.
    """
    if is_index(index):
        return
    time.sleep(ARMED_MS / 1000)
    if is_index(index):
        return
    raise NotIndexed(
        f"the index at {index} was deleted while watching; nothing more was written: "
        "run `rag ingest DIR --watch` again to index the folders afresh"
    )
