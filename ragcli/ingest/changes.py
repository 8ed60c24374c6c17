"""Only what changed: the paths a folder watcher saw, brought into the index (`rag ingest --watch`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from ragcli.choices import DEFAULT_GROUP
from ragcli.ingest.report import IngestReport
from ragcli.ingest.run import IngestRun, open_run
from ragcli.ingest.walk import FileFilter, files_to_read, hidden_or_lock_file, link_into
from ragcli.store.removal import apply_exclusions
from ragcli.text import PART_SEPARATOR
from ragcli.types import ChunkSettings, Progress

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder


def ingest_changes(
    index: Path,
    roots: Sequence[Path],
    changed: Iterable[Path],
    *,
    embedder: Embedder,
    group: str = DEFAULT_GROUP,
    chunking: ChunkSettings | None = None,
    file_filter: FileFilter = FileFilter(),
    batch_chunks: int = 256,
    progress: Progress | None = None,
) -> IngestReport:
    """Bring the index in line with the given paths only (what a folder watcher saw change).

    A path that is a file under one of `roots` (and passes `file_filter`) is ingested when its
    content changed; a folder is walked, and a document stored at its own path (a file replaced
    by a folder of the same name) removed; a path that no longer exists removes what was indexed
    at or under it. A file that vanishes while it is read counts as removed, not failed. Other
    documents are not looked at, so the cost follows the change, not the folder's size. The
    write lock (when the index has one) is held for this call only.

    Args:
        index: the index directory (created when missing).
        roots: the watched folders (absolute); recorded as the index's roots.
        changed: absolute paths that were created, modified, renamed or deleted.
        embedder, group, chunking, file_filter, batch_chunks, progress: as for
            `ragcli.ingest.pipeline.ingest`.

    Returns:
        An `IngestReport`; `progress.advance(path, status)` is told "removed" for each removal.
    """
    changes = _classify_changes(roots, changed, file_filter)
    gone = changes.gone
    with open_run(
        index, embedder, group, chunking, batch_chunks, roots, check_pages=False, file_filter=file_filter
    ) as run:
        for path, reason in changes.unreadable:
            run.fail(path, reason)
        files = apply_exclusions(run.store, list(changes.files))  # what `rag rm` removed stays out
        if progress:
            progress.start(len(files))
        for path in files:
            status = run.ingest_file(path)
            if status == "failed" and _vanished(path):
                run.report.failed.pop()
                gone.append(path)
                continue
            if progress:
                progress.advance(str(path), status)
        run.batcher.flush()
        _remove_gone(run, gone, progress)
        _remove_files_now_folders(run, changes.folders, progress)
    return run.report


@dataclass
class _Changes:
    """The changed paths, sorted: files to (re)ingest, paths gone, folders walked, and paths
    that cannot be looked at (a folder without permission), each with the reason."""

    files: dict[Path, None] = field(default_factory=dict)
    gone: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


def _classify_changes(roots: Sequence[Path], changed: Iterable[Path], file_filter: FileFilter) -> _Changes:
    """Sort the changed paths under `roots` by what is at each one now."""
    changes = _Changes()
    for path in sorted(set(changed)):
        root = next((r for r in roots if path == r or r in path.parents), None)
        if root is None:
            continue
        relative = path.relative_to(root).parts if path != root else ()
        if any(hidden_or_lock_file(part) for part in relative):
            continue
        try:
            _classify(root, path, file_filter, changes)
        except OSError as error:  # in a folder without permission: kept as it is, and said
            changes.unreadable.append(
                (path, f"cannot read ({error.strerror or error}); check its permissions")
            )
    return changes


def _classify(root: Path, path: Path, file_filter: FileFilter, changes: _Changes) -> None:
    if path == root and not path.exists():
        return  # moved away or unmounted: its documents are kept, as `rag ingest` keeps them
    if link_into(path, root):  # now a link to a file of the folder, which is read as itself
        changes.gone.append(path)
        return
    if path.is_dir() or path.is_file() or path.is_symlink():  # a dangling link is read, and fails
        found = files_to_read(
            root, path, file_filter, lambda folder, why: changes.unreadable.append((folder, why))
        )
        changes.files.update(dict.fromkeys(found))
        if path != root and path.is_dir():
            changes.folders.append(path)
    else:
        changes.gone.append(path)


def _remove_gone(run: IngestRun, gone: Sequence[Path], progress: Progress | None) -> None:
    found = run.store.documents_under(gone) if gone else {}
    run.remove(list(found.values()))
    if progress:
        for path in sorted(found):
            progress.advance(path, "removed")


def _remove_files_now_folders(run: IngestRun, folders: Sequence[Path], progress: Progress | None) -> None:
    """A document stored at a path that is now a folder was a file the folder replaced: gone.

    Its parts (``PATH#N``, the messages of a mailbox) go with it; what lies under the folder
    was walked above."""
    found = run.store.documents_under(folders) if folders else {}
    named = [str(folder) for folder in folders]
    stale = {
        path: doc_id
        for path, doc_id in found.items()
        if any(path == name or path.startswith(name + PART_SEPARATOR) for name in named)
    }
    run.remove(list(stale.values()))
    if progress:
        for path in sorted(stale):
            progress.advance(path, "removed")


def _vanished(path: Path) -> bool:
    """Whether a file that failed was deleted meanwhile (a dangling link was not, nor a file that
    cannot be looked at)."""
    try:
        return not path.exists() and not path.is_symlink()
    except OSError:
        return False
