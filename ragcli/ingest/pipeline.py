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

import hashlib
import json
import logging
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from ragcli.choices import DEFAULT_GROUP
from ragcli.errors import IndexMismatch, RagError, ReaderError
from ragcli.locking import DEFAULT_TIMEOUT, index_writer
from ragcli.ingest.readers import TEXT_FILE_TYPES, is_probably_binary, read_document, reader_for
from ragcli.ingest.readers.base import open_regular
from ragcli.ingest.batching import COMMIT_SECONDS, FIRST_BATCH, _Batcher, _Piece, span_hash  # noqa: F401
from ragcli.ingest.embedding_pass import EmbedReport, embed_pending, pending_count, tell
from ragcli.ingest.readers.ocr import OcrUnavailable
from ragcli.ingest.splitting import PRESETS, page_starts, section_bounds, split, validate_settings
from ragcli.store.local.database import Store
from ragcli.store.interface import Backend
from ragcli.store.chooser import create_backend, open_backend
from ragcli.store.errors import storage_errors
from ragcli.store.ownership import (
    claim_index_dir,
    is_index,
    remove_index,
    require_index_or_absent,
    require_own_files,
)
from ragcli.types import ChunkSettings, Document, Progress, Span
from ragcli.ingest.remembered import META_KEY as ROOT_OPTIONS
from ragcli.ingest.remembered import RootOptions, merged_root_options
from ragcli.ingest.walk import (
    FileFilter,
    disk_path,
    display_path,
    files_to_read,
    refuse_index_in_roots,
    resolve_roots,
    walk_files,
)
from ragcli.store.removal import apply_exclusions, copy_exclusions

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Failure:
    path: str
    reason: str


@dataclass
class IngestReport:
    """What one ingest did."""

    index: str
    group: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0
    failed: list[Failure] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    vectors: int = 0
    seconds: float = 0.0
    # Indexed documents the walk left out (--include/--exclude) whose files still exist: kept,
    # never pruned; the CLI says so. Not part of the JSON report.
    left_out: list[str] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        data = asdict(self)
        del data["left_out"]
        return data


def merge_reports(reports: Sequence[IngestReport]) -> IngestReport:
    """One report for the runs of one ingest (a bare ingest runs once per set of root options)."""
    if len(reports) == 1:
        return reports[0]
    merged = IngestReport(index=reports[0].index, group=", ".join(dict.fromkeys(r.group for r in reports)))
    for report in reports:
        for name in ("added", "updated", "unchanged", "removed", "skipped", "chunks", "embedded", "reused"):
            setattr(merged, name, getattr(merged, name) + getattr(report, name))
        merged.failed.extend(report.failed)
        merged.vectors = report.vectors
        merged.seconds = round(merged.seconds + report.seconds, 3)
    return merged


def chunking_for(store: Backend, group: str, chunking: ChunkSettings | None) -> ChunkSettings:
    """Explicit settings, else the group's stored ones, else its preset, else the default preset."""
    if chunking is not None:
        validate_settings(chunking)
        return chunking
    return store.groups().get(group) or PRESETS.get(group, PRESETS[DEFAULT_GROUP])


def check_model(store: Backend, embedder: Embedder) -> None:
    """Refuse to mix vectors of different models in one index.

    Raises:
        IndexMismatch: the index was built with another model; the message gives the rebuild command.
    """
    fingerprint = store.get_meta("embedding_fingerprint")
    if fingerprint is None or fingerprint == embedder.fingerprint:
        return
    roots = " ".join(json.loads(store.get_meta("roots", "[]") or "[]")) or "DIR"
    if store.get_meta("embedding_model") == embedder.model_id:  # same model, another runtime
        built, wanted = (runtime_name(f) for f in (fingerprint, embedder.fingerprint))
        raise IndexMismatch(
            f"the index at {store.path} was built with the {built} embedding runtime, not {wanted}; "
            f"use it without --embed-runtime, or rebuild it with: "
            f"rag ingest --rebuild --embed-runtime {wanted} --index {store.path} {roots}"
        )
    raise IndexMismatch(
        f"the index at {store.path} was built with embedding model {store.get_meta('embedding_model')} "
        f"(dimension {store.get_meta('embedding_dimension')}), not {embedder.model_id} "
        f"(dimension {embedder.dimension}); rebuild it with: "
        f"rag ingest --rebuild --embed-model {embedder.model_id} --index {store.path} {roots}"
    )


def runtime_name(fingerprint: str) -> str:
    """fp32 or int8: the embedding runtime a fingerprint names."""
    from ragcli.embedding.loader import INT8_SUFFIX

    return "int8" if fingerprint.endswith(INT8_SUFFIX) else "fp32"


def record_model(store: Backend, embedder: Embedder) -> None:
    store.bind_model(embedder.model_id, embedder.fingerprint, embedder.dimension)
    store.set_meta("embedding_model", embedder.model_id)
    store.set_meta("embedding_fingerprint", embedder.fingerprint)
    store.set_meta("embedding_dimension", embedder.dimension)


def vector_params(store: Backend, group: str) -> dict:
    """What the params file beside a group's vectors records."""
    settings = store.group(group)
    return {
        "model": store.get_meta("embedding_model"),
        "fingerprint": store.get_meta("embedding_fingerprint"),
        "chunking": asdict(settings),
    }


def document_record(doc: Document, content_hash: str) -> dict:
    """The document's row; names that are not valid UTF-8 are stored with `\\xNN` escapes."""
    meta = dict(doc.metadata)
    return {
        "path": display_path(doc.path),
        "file_type": doc.file_type,
        "content_hash": content_hash,
        "file_name": display_path(meta.pop("file_name", Path(doc.path).name)),
        "size": meta.pop("size", len(doc.text)),
        "modified": meta.pop("modified", None),
        "created": meta.pop("created", None),
        "title": meta.pop("title", None),
        "metadata": meta,
    }


def split_document(doc: Document, settings: ChunkSettings, embedder: Embedder) -> Iterator[list[Span]]:
    """The document's spans, one list per section (see `section_bounds`), offsets and order
    counted over the whole text. Memory stays bounded by a section, not the document."""
    tokenize = embedder.token_offsets if settings.split_by == "token" else None
    order = 0
    for start, end in section_bounds(doc.text):
        spans = split(
            doc.text[start:end],
            split_by=settings.split_by,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            tokenize=tokenize,
        )
        capped = list(_capped(spans))
        yield [
            Span(span.text, order + i, span.start + start, span.end + start) for i, span in enumerate(capped)
        ]
        order += len(capped)


# Longest chunk text, in characters. A window of words or sentences can still be one huge
# "word" (a base64 blob, a line of CJK without spaces); cut there, every chunk and its BM25
# terms fit a 65,535-byte text field (Milvus VARCHAR; CJK terms take ~7 bytes a character),
# and no chunk holds more than an embedder reads (a few hundred tokens) many times over.
MAX_CHUNK_CHARS = 8_000


def _capped(spans: Sequence[Span]) -> Iterator[Span]:
    """`spans`, with any longer than `MAX_CHUNK_CHARS` cut into consecutive pieces."""
    for span in spans:
        if len(span.text) <= MAX_CHUNK_CHARS:
            yield span
            continue
        for offset in range(0, len(span.text), MAX_CHUNK_CHARS):
            piece = span.text[offset : offset + MAX_CHUNK_CHARS]
            begin = min(span.start + offset, span.end)
            yield Span(piece, span.order, begin, min(begin + len(piece), span.end))


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
    with _run(
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
    ) as (store, settings, batcher, report):
        batcher.progress = progress
        # dict.fromkeys: a file root inside a folder root is one file, read (and counted) once
        files = list(dict.fromkeys(p for root in roots for p in walk_files(root, file_filter)))
        files = apply_exclusions(store, files)  # what `rag rm` removed stays out
        sizes = _file_sizes(files) if progress else []
        if progress:
            progress.start(len(files))
            tell(progress, "start_bytes", sum(sizes))
        for number, path in enumerate(files):
            status = _ingest_file(store, batcher, path, settings, group, embedder, report)
            if progress:
                progress.advance(str(path), status)
                tell(progress, "read_bytes", sizes[number])
        batcher.flush()
        if prune:
            _prune(store, roots, {display_path(str(p)) for p in files}, report)
    return report


@contextmanager
def _run(
    index: Path,
    embedder: Embedder,
    group: str,
    chunking: ChunkSettings | None,
    batch_chunks: int,
    roots: Sequence[Path],
    *,
    lock_timeout: float = DEFAULT_TIMEOUT,
    on_wait: Callable[[str], None] | None = None,
    check_pages: bool = True,
    store_uri: str | None = None,
    file_filter: FileFilter = FileFilter(),
    embed: bool = True,
) -> Iterator[tuple[Backend, ChunkSettings, "_Batcher", IngestReport]]:
    """Open the index for one ingest under its write lock; on success embed the chunks still
    without a vector (unless not `embed`), sync vectors and record the run, always close.
    Storage failures (disk full, a damaged file) become one `RagError`.

    `check_pages=False` skips the whole-database page check, whose cost grows with the index:
    for a watcher's small batches, whose run began with a full ingest that checked it."""
    started = time.perf_counter()
    claim_index_dir(index)
    with index_writer(index, timeout=lock_timeout, on_wait=on_wait), storage_errors(index):
        store = create_backend(index, store_uri)
        try:
            # A damaged page would otherwise pass unnoticed (files "unchanged") until a query
            # trips on it; reading every page once took 0.35 s for a 430 MB database.
            if check_pages:
                store.check_integrity()
            check_model(store, embedder)
            report = IngestReport(index=str(index), group=group)
            settings = chunking_for(store, group, chunking)
            _start_group(store, embedder, group, settings)
            batcher = _Batcher(store, embedder, group, report, batch_chunks)
            yield store, settings, batcher, report
            if embed:
                embedded = embed_pending(
                    store, embedder, progress=batcher.progress, batch_chunks=batch_chunks
                )
                _add(report, embedded)
            report.seconds = round(time.perf_counter() - started, 3)  # recorded in last_ingest
            _finish(store, report, roots, file_filter)
        finally:
            store.close()
    report.seconds = round(time.perf_counter() - started, 3)


def _add(report: IngestReport, embedded: EmbedReport) -> None:
    report.embedded += embedded.embedded


def _file_sizes(files: Sequence[Path]) -> list[int]:
    """Bytes of each file (0 where it cannot be stat'ed): the progress bar's measure."""
    sizes = []
    for path in files:
        try:
            sizes.append(path.stat().st_size)
        except OSError:
            sizes.append(0)
    return sizes


def _start_group(store: Backend, embedder: Embedder, group: str, settings: ChunkSettings) -> None:
    with store.transaction():
        record_model(store, embedder)
        if store.ensure_group(group, settings):
            # New settings: every document must be re-chunked, even after an interruption.
            store.forget_chunked(group)


def _ingest_file(store, batcher, path: Path, settings, group, embedder, report: IngestReport) -> str:
    reader = reader_for(path)
    # PDF and DOCX are binary containers; only text formats are sniffed for NUL bytes.
    if reader is None or (reader.file_type in TEXT_FILE_TYPES and is_probably_binary(path)):
        report.skipped += 1
        log.info(
            "skipped %s: %s", display_path(str(path)), "unsupported type" if reader is None else "binary"
        )
        return "skipped"
    shown = display_path(str(path))
    if hasattr(reader, "read_all"):
        return _ingest_parts(store, batcher, path, reader, settings, group, embedder, report)
    try:
        content_hash = file_hash(path)
        existing = store.document_by_path(shown)
        if _unchanged(store, existing, content_hash, group):
            report.unchanged += 1
            return "unchanged"
        # Keyed by the walked path, not the reader's resolved one: a symlink to a file outside
        # the folder is then one document of this folder, pruned when the link goes.
        document = replace(read_document(path), path=str(path))
    except OcrUnavailable as error:
        report.skipped += 1
        log.warning("skipped %s", display_path(str(error)))
        return "skipped"
    except ReaderError as error:
        report.failed.append(Failure(shown, display_path(str(error))))
        return "failed"
    except Exception as error:  # noqa: BLE001 - the per-file boundary: a reader's bug, a RecursionError
        # or a MemoryError in one file's parser costs that file, never the rest of the ingest.
        report.failed.append(Failure(shown, unexpected_reader_error(shown, error)))
        return "failed"
    return _queue(batcher, document, content_hash, settings, embedder, report, existing is not None)


def unexpected_reader_error(shown: str, error: BaseException) -> str:
    """One line for an exception a reader did not turn into a `ReaderError` itself."""
    kinds = {
        RecursionError: "its structure is nested too deeply to read",
        MemoryError: "it needs more memory than is available to read",
    }
    reason = next((text for kind, text in kinds.items() if isinstance(error, kind)), None)
    detail = " ".join(str(error).split())[:200]
    reason = reason or f"its reader failed ({type(error).__name__}{': ' + detail if detail else ''})"
    return f"{shown}: cannot read it: {reason}"


def _ingest_parts(store, batcher, path: Path, reader, settings, group, embedder, report: IngestReport) -> str:
    """A file of several documents (a mailbox, a message with attachments).

    The first document is stored under the file's path with the file's hash and queued last,
    so an interrupted run is not taken for a finished one; the others (``FILE#N...``) carry
    a hash of the file's hash and their path, and are skipped when unchanged.
    """
    shown = display_path(str(path))
    first = None
    try:
        content_hash = file_hash(path)
        existing = store.document_by_path(shown)
        if _unchanged(store, existing, content_hash, group):
            report.unchanged += 1
            return "unchanged"
        stale = {p: i for p, i in store.documents_under([Path(shown)]).items() if p != shown}
        for document in reader.read_all(path):
            if first is None:
                first = replace(document, path=str(path))
                continue
            stale.pop(display_path(document.path), None)
            part_hash = span_hash(content_hash + document.path)
            part = store.document_by_path(display_path(document.path))
            if not _unchanged(store, part, part_hash, group):
                _queue(batcher, document, part_hash, settings, embedder, report, part is not None)
        _remove(store, list(stale.values()), report)  # messages gone from a changed mailbox
    except ReaderError as error:
        report.failed.append(Failure(shown, display_path(str(error))))
        if first is None:
            return "failed"
    return _queue(batcher, first, content_hash, settings, embedder, report, existing is not None)


def file_hash(path: Path) -> str:
    """sha256 of a regular file's bytes, read in blocks (never the whole file at once).

    Raises:
        ReaderError: the file cannot be read or is not a regular file (a pipe never blocks).
    """
    with open_regular(path) as handle:
        try:
            return hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError as error:
            raise ReaderError(f"{path}: cannot read file ({error.strerror or error})") from error


def _unchanged(store: Backend, existing: dict | None, content_hash: str, group: str) -> bool:
    """Same content, already chunked with the group's current settings."""
    return (
        bool(existing)
        and existing["content_hash"] == content_hash
        and store.chunked_hash(existing["id"], group) == content_hash
    )


def _queue(batcher: _Batcher, document, content_hash, settings, embedder, report, exists: bool) -> str:
    """Hand the document's chunks to the batcher in pieces no bigger than a batch."""
    # A paged format (its reader counts `pages`) keeps page 1 even when it has one page.
    paged = "\f" in document.text or bool(document.metadata.get("pages"))
    starts = page_starts(document.text) if paged else []
    record = document_record(document, content_hash)
    first = True
    sections = split_document(document, settings, embedder)
    spans = next(sections)
    while spans is not None:
        following = next(sections, None)
        while True:
            take = batcher.room()
            piece, spans = spans[:take], spans[take:]
            last = not spans and following is None
            batcher.add(_Piece(record, content_hash, piece, starts, first, last))
            first = False
            if not spans:
                break
        spans = following
    if exists:
        report.updated += 1
        return "updated"
    report.added += 1
    return "added"


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
    with _run(
        index, embedder, group, chunking, batch_chunks, [], lock_timeout=lock_timeout, store_uri=store
    ) as (
        store,
        settings,
        batcher,
        report,
    ):
        seen: set[str] = set()
        for document in documents:
            seen.add(document.path)
            status = _ingest_text(store, batcher, document, settings, group, embedder, report)
            if progress:
                progress.advance(document.path, status)
        batcher.flush()
        if prune:
            stale = [doc_id for path, doc_id in _all_documents(store).items() if path not in seen]
            _remove(store, stale, report)
    return report


def _ingest_text(store, batcher, document: Document, settings, group, embedder, report) -> str:
    content_hash = span_hash(document.text)
    existing = store.document_by_path(document.path)
    if _unchanged(store, existing, content_hash, group):
        report.unchanged += 1
        return "unchanged"
    return _queue(batcher, document, content_hash, settings, embedder, report, existing is not None)


def _all_documents(store: Backend) -> dict[str, int]:
    return store.document_ids()


def _prune(store: Backend, roots: Sequence[Path], seen: set[str], report: IngestReport) -> None:
    """Remove documents whose files are gone from disk. A document the walk did not reach but
    whose file is still there (a narrower --include, a new --exclude) is kept and reported:
    a mistyped glob must never empty an index; `rag rm` removes on purpose."""
    folders = [root for root in roots if root.is_dir()]
    unseen = {
        path: doc_id
        for path, doc_id in store.documents_under(folders).items()
        if path not in seen and not _part_of(path, seen)
    }
    report.left_out = sorted(path for path in unseen if disk_path(path).exists())
    kept = set(report.left_out)
    _remove(store, [doc_id for path, doc_id in unseen.items() if path not in kept], report)


def _part_of(path: str, seen: set[str]) -> bool:
    """A document read from a file of several (``FILE#N``) whose file is still there."""
    return any(path[:i] in seen for i, char in enumerate(path) if char == "#")


def _remove(store: Backend, doc_ids: list[int], report: IngestReport) -> None:
    if doc_ids:
        with store.transaction():
            report.removed += store.delete_documents(doc_ids)


def _finish(
    store: Backend, report: IngestReport, roots: Sequence[Path], file_filter: FileFilter = FileFilter()
) -> None:
    """Sync every group's vectors, drop unused vectors, record the run and each root's options."""
    for group in store.groups():
        count = store.sync_vectors(group, vector_params(store, group))
        if group == report.group:
            report.vectors = count
    with store.transaction():
        store.drop_unused_vectors()
        known = json.loads(store.get_meta("roots", "[]") or "[]")
        store.set_meta("roots", json.dumps(sorted(set(known) | {str(r) for r in roots})))
        if roots:
            options = RootOptions(report.group, file_filter.include, file_filter.exclude)
            store.set_meta(ROOT_OPTIONS, merged_root_options(store.get_meta(ROOT_OPTIONS), roots, options))
        store.set_meta("last_ingest", json.dumps({**report.to_dict(), "failed": len(report.failed)}))


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
    Store.open(index).close()  # NotIndexed before creating a lock file anywhere (or connecting)
    with index_writer(index, timeout=lock_timeout, on_wait=on_wait), storage_errors(index):
        store = open_backend(index)
        try:
            targets = [display_path(str(Path(p).expanduser().resolve())) for p in paths]
            found = store.documents_under([Path(t) for t in targets])
            if not found:
                raise RagError(f"nothing indexed under {', '.join(map(display_path, paths))}: see `rag ls`")
            report = IngestReport(index=str(index), group="")
            _remove(store, list(found.values()), report)
            _finish(store, report, [])
            return report.removed
        finally:
            store.close()


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
    Store.open(index).close()  # NotIndexed before creating a lock file anywhere (or connecting)
    with index_writer(index, timeout=lock_timeout, on_wait=on_wait), storage_errors(index):
        store = open_backend(index)
        try:
            check_model(store, embedder)
            if store.get_meta("embedding_fingerprint") is None:
                record_model(store, embedder)
            report = embed_pending(store, embedder, progress=progress, batch_chunks=batch_chunks)
            for group in store.groups():
                store.sync_vectors(group, vector_params(store, group))
            with store.transaction():
                store.drop_unused_vectors()
            report.remaining = pending_count(store)
        finally:
            store.close()
    report.seconds = round(time.perf_counter() - started, 3)
    return report


def _refuse_remote_rebuild(index: Path, uri: str | None) -> None:
    """`--rebuild` swaps index folders; a Milvus store's content is not in the folder.

    Raises:
        UsageError: the index (or the requested store) is on Milvus.
    """
    from ragcli.errors import UsageError
    from ragcli.store.local.database import read_index_meta
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


def known_roots(index: Path) -> list[str]:
    """The roots earlier ingests recorded, for `rag ingest` with no paths.

    Raises:
        UsageError: nothing was ingested before, so there is nothing to default to.
    """
    from ragcli.errors import UsageError
    from ragcli.store.local.database import read_index_meta

    roots = json.loads(read_index_meta(index, "roots") or "[]")
    if not roots:
        raise UsageError("no paths given and none ingested before: rag ingest DIR [DIR ...]")
    return roots


def chunking_override(
    index: Path, group: str, split_by: str | None, chunk_size: int | None, chunk_overlap: int | None
) -> ChunkSettings | None:
    """Settings from the flags given, the rest from the group's current settings or preset."""
    from dataclasses import replace

    from ragcli.store.local.database import DATABASE_NAME

    given = {
        k: v
        for k, v in {"split_by": split_by, "chunk_size": chunk_size, "chunk_overlap": chunk_overlap}.items()
        if v is not None
    }
    if not given:
        return None
    base = PRESETS.get(group, PRESETS[DEFAULT_GROUP])
    if (index / DATABASE_NAME).is_file():
        store = Store.open(index)
        try:
            base = store.groups().get(group, base)
        finally:
            store.close()
    settings = replace(base, **given)
    validate_settings(settings)
    return settings


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
    content changed; a folder is walked; a path that no longer exists removes what was indexed
    at or under it. A file that vanishes while it is read counts as removed, not failed. Other
    documents are not looked at, so the cost follows the change, not the folder's size. The
    write lock (when the index has one) is held for this call only.

    Args:
        index: the index directory (created when missing).
        roots: the watched folders (absolute); recorded as the index's roots.
        changed: absolute paths that were created, modified, renamed or deleted.
        embedder, group, chunking, file_filter, batch_chunks, progress: as for `ingest`.

    Returns:
        An `IngestReport`; `progress.advance(path, status)` is told "removed" for each removal.
    """
    files, gone = _classify_changes(roots, changed, file_filter)
    with _run(
        index, embedder, group, chunking, batch_chunks, roots, check_pages=False, file_filter=file_filter
    ) as (
        store,
        settings,
        batcher,
        report,
    ):
        files = apply_exclusions(store, files)  # what `rag rm` removed stays out
        if progress:
            progress.start(len(files))
        for path in files:
            status = _ingest_file(store, batcher, path, settings, group, embedder, report)
            if status == "failed" and not path.exists():
                report.failed.pop()
                gone.append(path)
                continue
            if progress:
                progress.advance(str(path), status)
        batcher.flush()
        _remove_gone(store, gone, report, progress)
    return report


def _classify_changes(
    roots: Sequence[Path], changed: Iterable[Path], file_filter: FileFilter
) -> tuple[list[Path], list[Path]]:
    """Split changed paths into files to (re)ingest and paths that are gone."""
    files: dict[Path, None] = {}
    gone: list[Path] = []
    for path in sorted(set(changed)):
        root = next((r for r in roots if path == r or r in path.parents), None)
        if root is None:
            continue
        relative = path.relative_to(root).parts if path != root else ()
        if any(part.startswith(".") for part in relative):
            continue
        if path.is_dir() or path.is_file():
            files.update(dict.fromkeys(files_to_read(root, path, file_filter)))
        else:
            gone.append(path)
    return list(files), gone


def _remove_gone(
    store: Backend, gone: Sequence[Path], report: IngestReport, progress: Progress | None
) -> None:
    found = store.documents_under(gone) if gone else {}
    _remove(store, list(found.values()), report)
    if progress:
        for path in sorted(found):
            progress.advance(path, "removed")
