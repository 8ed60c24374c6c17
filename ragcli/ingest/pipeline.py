"""Ingest: files on disk -> documents and chunks in SQLite -> vectors in FAISS.

1. Walk the roots (hidden files skipped, include/exclude globs applied).
2. Hash each file; a file whose hash and group chunking are unchanged is skipped unread.
3. Read it (reader per suffix) and split it into the group's windows.
4. Chunks whose text hash already has a vector reuse it. Each batch of documents is committed
   in one transaction with its BM25 postings, so a killed ingest keeps what it finished and
   the next run resumes from there. On the local store new chunk texts are committed without
   a vector: the folder is searchable by BM25 within seconds (searchable first).
5. Files gone from an ingested root are pruned.
6. The chunks without a vector are embedded batch by batch (`ragcli.ingest.embedding_pass`,
   skipped with `defer_embedding`: `embed_index` does it later); a store that cannot hold a
   chunk without its vector (Milvus) embeds each batch before writing it instead.
7. Every group's vector file is brought in line and written atomically; vectors no chunk
   uses any more are dropped.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from ragcli.choices import DEFAULT_GROUP
from ragcli.errors import RagError
from ragcli.ingest.embedding_pass import EmbedReport, embed_pending, pending_count, tell
from ragcli.ingest.index_model import check_model, record_model, vector_params
from ragcli.ingest.report import IngestReport
from ragcli.ingest.run import IngestRun, finish, open_run, remove_documents
from ragcli.ingest.walk import FileFilter, display_path, refuse_index_in_roots, resolve_roots, walk_files
from ragcli.locking import DEFAULT_TIMEOUT, index_writer
from ragcli.store.chooser import open_backend
from ragcli.store.errors import storage_errors
from ragcli.store.interface import Backend
from ragcli.store.directory import IndexDirectory
from ragcli.store.ownership import (
    claim_index_dir,
    is_index,
    remove_index,
    require_index_or_absent,
    require_own_files,
)
from ragcli.store.removal import apply_exclusions, copy_exclusions
from ragcli.types import ChunkSettings, Document, Progress

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder


def ingest(
    index: Path,
    paths: Sequence[str | Path],
    *,
    embedder: Embedder,
    group: str = DEFAULT_GROUP,
    chunking: ChunkSettings | None = None,
    file_filter: FileFilter = FileFilter(),
    prune: bool = True,
    rebuild: bool = False,
    batch_chunks: int = 256,
    progress: Progress | None = None,
    lock_timeout: float = DEFAULT_TIMEOUT,
    on_wait: Callable[[str], None] | None = None,
    store: str | None = None,
    defer_embedding: bool = False,
) -> IngestReport:
    """Ingest files and folders into the index at `index`.

    Args:
        index: the index directory (created when missing).
        paths: folders and files; folders are walked recursively.
        embedder: the embedding model (must match the index's unless `rebuild`).
        group: the chunk group (granularity) to fill.
        chunking: split settings; default: the group's stored settings or its preset.
        file_filter: include/exclude globs.
        prune: remove indexed documents under the given folders whose files are gone.
        rebuild: build a fresh index beside the old one and swap it in when done.
        batch_chunks: most chunks committed per transaction, text or vectors (a text batch
            is also committed after COMMIT_SECONDS of work).
        progress: optional progress receiver.
        lock_timeout: seconds to wait for another process writing the same index.
        on_wait: told once (one line) when this run has to wait for that process.
        store: where a new index keeps its content: None or "local", a Milvus Lite file
            (``*.db``) or a Milvus server URL (`ragcli.store.interface`); an existing index
            keeps the store it was created with.
        defer_embedding: return once the text is indexed (searchable by BM25); `embed_index`
            (`rag embed`), the next ingest or a watcher embeds the rest. The local store
            only: a Milvus store embeds as it writes.

    Returns:
        An `IngestReport`.

    Raises:
        IndexMismatch: the index uses another embedding model and `rebuild` is off.
        UsageError: a path does not exist, the chunk settings are invalid, or `store`
            differs from the index's.
        StoreUnavailable: the Milvus store cannot be reached.
        NotAnIndex: `index` (or `<index>.rebuild`/`.old`) exists and is not a ragcli index.
        IndexBusy: another process kept the index locked for longer than `lock_timeout`.
        StorageFull: the disk filled up; what was committed before is kept.
    """
    roots = resolve_roots(paths)
    refuse_index_in_roots(index, roots)
    lock = {"lock_timeout": lock_timeout, "on_wait": on_wait}
    if rebuild:
        _refuse_remote_rebuild(index, store)
        return _rebuild(
            index,
            roots,
            embedder=embedder,
            group=group,
            chunking=chunking,
            file_filter=file_filter,
            batch_chunks=batch_chunks,
            progress=progress,
            defer_embedding=defer_embedding,
            **lock,
        )
    with open_run(
        index,
        embedder,
        group,
        chunking,
        batch_chunks,
        roots,
        store_uri=store,
        file_filter=file_filter,
        embed=not defer_embedding,
        **lock,
    ) as run:
        run.batcher.progress = progress
        # dict.fromkeys: a file root inside a folder root is one file, read (and counted) once
        files = list(dict.fromkeys(p for root in roots for p in walk_files(root, file_filter, run.fail)))
        kept = apply_exclusions(run.store, files)  # what `rag rm` removed stays out
        if len(kept) < len(files):
            run.report.removed_earlier = sorted(display_path(str(f)) for f in set(files) - set(kept))
        files = kept
        _read_files(run, files, progress)
        run.batcher.flush()
        if prune:
            run.prune(roots, {display_path(str(p)) for p in files})
    return run.report


def _read_files(run: IngestRun, files: Sequence[Path], progress: Progress | None) -> None:
    """Each file read and queued, the progress told files and bytes."""
    sizes = _file_sizes(files) if progress else []
    if progress:
        progress.start(len(files))
        tell(progress, "start_bytes", sum(sizes))
    for number, path in enumerate(files):
        status = run.ingest_file(path)
        if progress:
            progress.advance(str(path), status)
            tell(progress, "read_bytes", sizes[number])


def _file_sizes(files: Sequence[Path]) -> list[int]:
    """Bytes of each file (0 where it cannot be stat'ed): the progress bar's measure."""
    sizes = []
    for path in files:
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            sizes.append(0)
    return sizes


def ingest_documents(
    index: Path,
    documents: Iterable[Document],
    *,
    embedder: Embedder,
    group: str = DEFAULT_GROUP,
    chunking: ChunkSettings | None = None,
    prune: bool = True,
    batch_chunks: int = 256,
    progress: Progress | None = None,
    lock_timeout: float = DEFAULT_TIMEOUT,
    store: str | None = None,
) -> IngestReport:
    """Ingest in-memory documents (e.g. a BEIR corpus) keyed by `Document.path`.

    With `prune`, documents in the index that are not among `documents` are removed (on a
    shared Milvus store: every other document in it). `store` is as for `ingest`.
    """
    with open_run(
        index, embedder, group, chunking, batch_chunks, [], lock_timeout=lock_timeout, store_uri=store
    ) as run:
        seen: set[str] = set()
        for document in documents:
            seen.add(document.path)
            status = run.ingest_text(document)
            if progress:
                progress.advance(document.path, status)
        run.batcher.flush()
        if prune:
            run.remove([doc_id for path, doc_id in run.store.document_ids().items() if path not in seen])
    return run.report


def remove_paths(
    index: Path,
    paths: Sequence[str],
    *,
    lock_timeout: float = DEFAULT_TIMEOUT,
    on_wait: Callable[[str], None] | None = None,
) -> int:
    """Remove documents by path (a folder removes everything under it); returns how many.

    Raises:
        NotIndexed: there is no index.
        RagError: nothing in the index matches a given path.
        IndexBusy: another process kept the index locked for longer than `lock_timeout`.
    """
    with _existing_index(index, lock_timeout, on_wait) as store:
        targets = [display_path(str(Path(p).expanduser().resolve())) for p in paths]
        found = store.documents_under([Path(t) for t in targets])
        if not found:
            raise RagError(f"nothing indexed under {', '.join(map(display_path, paths))}: see `rag ls`")
        report = IngestReport(index=str(index), group="")
        remove_documents(store, list(found.values()), report)
        finish(store, report)
        return report.removed


def embed_index(
    index: Path,
    *,
    embedder: Embedder,
    progress: Any = None,
    batch_chunks: int = 2048,
    lock_timeout: float = DEFAULT_TIMEOUT,
    on_wait: Callable[[str], None] | None = None,
) -> EmbedReport:
    """Embed the chunks an earlier ingest left without a vector (`rag embed`), then bring
    every group's vector file in line. Resumable: a kill keeps every committed batch.

    Raises:
        NotIndexed: there is no index.
        IndexMismatch: `embedder` is not the index's model.
        IndexBusy: another process kept the index locked for longer than `lock_timeout`.
    """
    started = time.perf_counter()
    with _existing_index(index, lock_timeout, on_wait) as store:
        check_model(store, embedder)
        if store.get_meta("embedding_fingerprint") is None:
            record_model(store, embedder)
        report = embed_pending(store, embedder, progress=progress, batch_chunks=batch_chunks)
        for group in store.groups():
            store.sync_vectors(group, vector_params(store, group))
        with store.transaction():
            store.drop_unused_vectors()
        report.remaining = pending_count(store)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


@contextmanager
def _existing_index(
    index: Path, lock_timeout: float, on_wait: Callable[[str], None] | None
) -> Iterator[Backend]:
    """The existing index's store under its write lock, closed after; storage failures as one line.

    Raises:
        NotIndexed: there is no index (said before a lock file is made anywhere, or a connection).
        IndexBusy: another process kept the index locked for longer than `lock_timeout`.
    """
    IndexDirectory.open(index).close()
    with index_writer(index, timeout=lock_timeout, on_wait=on_wait), storage_errors(index):
        store = open_backend(index)
        try:
            yield store
        finally:
            store.close()


def _refuse_remote_rebuild(index: Path, uri: str | None) -> None:
    """`--rebuild` swaps index folders; a Milvus store's content is not in the folder.

    Raises:
        UsageError: the index (or the requested store) is on Milvus.
    """
    from ragcli.errors import UsageError
    from ragcli.store.directory import read_index_meta
    from ragcli.store.interface import STORE_URI_KEY, normalise_uri

    recorded = read_index_meta(index, STORE_URI_KEY)
    remote = recorded or (normalise_uri(uri) if uri else "local")
    if remote != "local":
        raise UsageError(
            f"--rebuild works on local indexes only; the index at {index} keeps its content in {remote}: "
            "drop its collections there (or use a new --store) and ingest again"
        )


def _rebuild(
    index: Path,
    roots: list[Path],
    *,
    lock_timeout: float = DEFAULT_TIMEOUT,
    on_wait: Callable[[str], None] | None = None,
    **options,
) -> IngestReport:
    """Build a fresh index next to the old one; swap folders only when it is complete.

    Only ragcli's own indexes are ever removed or renamed: `index`, `<index>.rebuild` and
    `<index>.old` must each be missing or provably an index (see `ragcli.store.ownership`).
    """
    fresh = index.with_name(index.name + ".rebuild")
    old = index.with_name(index.name + ".old")
    require_index_or_absent(index, "the index to rebuild")
    require_index_or_absent(fresh, "left by an interrupted --rebuild")
    require_index_or_absent(old, "the previous index kept during --rebuild")
    require_own_files(index, "the index to rebuild")
    require_own_files(fresh, "left by an interrupted --rebuild")
    require_own_files(old, "the previous index kept during --rebuild")
    claim_index_dir(index)
    with index_writer(index, timeout=lock_timeout, on_wait=on_wait):
        remove_index(fresh)
        copy_exclusions(index, fresh)
        report = ingest(fresh, roots, lock_timeout=lock_timeout, on_wait=on_wait, **options)
        report.index = str(index)
        remove_index(old)
        if is_index(index) or index.exists():
            index.rename(old)
        fresh.rename(index)
    remove_index(old)
    return report
