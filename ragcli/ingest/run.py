"""One ingest run: the index opened under its write lock, and each file or document read,
split and handed to the batcher.

`open_run` opens the index and yields an `IngestRun`, which holds what every step of the run
shares (the store, the batcher, the chunk settings, the group, the embedder, the report), so
the steps take only what differs: a path, a document. On success the run embeds the chunks
still without a vector, syncs the vector files and records itself in the index's meta.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ragcli.errors import ReaderError
from ragcli.ingest.batching import _Batcher, _Piece, span_hash
from ragcli.ingest.chunking import chunking_for, split_document
from ragcli.ingest.embedding_pass import embed_pending
from ragcli.ingest.index_model import check_model, record_model, vector_params
from ragcli.ingest.readers import TEXT_FILE_TYPES, is_probably_binary, read_document, reader_for
from ragcli.ingest.readers.base import not_regular, open_regular
from ragcli.ingest.readers.ocr import OcrUnavailable
from ragcli.ingest.remembered import META_KEY as ROOT_OPTIONS
from ragcli.ingest.remembered import RootOptions, merged_root_options
from ragcli.ingest.report import Failure, IngestReport
from ragcli.ingest.splitting import page_starts
from ragcli.ingest.walk import FileFilter, disk_path, display_path, link_into
from ragcli.locking import DEFAULT_TIMEOUT, index_writer
from ragcli.store.chooser import create_backend
from ragcli.store.errors import storage_errors
from ragcli.store.interface import Backend, hash_key
from ragcli.store.ownership import claim_index_dir
from ragcli.types import ChunkSettings, Document
from ragcli.text import PART_SEPARATOR

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder

log = logging.getLogger(__name__)


@dataclass
class IngestRun:
    """What the steps of one ingest share; each step returns the file's status for progress
    ("added", "updated", "unchanged", "skipped", "failed")."""

    store: Backend
    batcher: _Batcher
    settings: ChunkSettings
    group: str
    embedder: Embedder
    report: IngestReport

    def ingest_file(self, path: Path) -> str:
        """Read, split and queue one file unless it is unchanged, unsupported or binary."""
        reader = reader_for(path)
        # PDF and DOCX are binary containers; only text formats are sniffed for NUL bytes.
        if reader is None or (reader.file_type in TEXT_FILE_TYPES and is_probably_binary(path)):
            # A pipe or a dangling link of a type rag reads fails below, when it is opened.
            reason = not_regular(path) or ("unsupported type" if reader is None else "binary")
            self.report.skipped += 1
            log.info("skipped %s: %s", display_path(str(path)), reason)
            return "skipped"
        shown = display_path(str(path))
        if hasattr(reader, "read_all"):
            return self._ingest_parts(path, reader)
        try:
            content_hash = read_hash(file_hash(path), reader)
            existing, unchanged = self._stored(shown, content_hash)
            if unchanged:
                return "unchanged"
            # Keyed by the walked path, not the reader's resolved one: a symlink to a file outside
            # the folder is then one document of this folder, pruned when the link goes.
            document = replace(read_document(path), path=str(path))
        except OcrUnavailable as error:
            self.report.skipped += 1
            log.warning("skipped %s", display_path(str(error)))
            return "skipped"
        except ReaderError as error:
            self.report.failed.append(Failure(shown, display_path(str(error))))
            return "failed"
        except Exception as error:  # noqa: BLE001 - the per-file boundary: a reader's bug, a RecursionError
            # or a MemoryError in one file's parser costs that file, never the rest of the ingest.
            reraise_interrupt(error)
            self.report.failed.append(Failure(shown, unexpected_reader_error(shown, error)))
            return "failed"
        return self.queue(document, content_hash, existing is not None)

    def fail(self, path: Path, reason: str) -> None:
        """Count a file or folder that cannot be read, with the reason its one line gives."""
        shown = display_path(str(path))
        self.report.failed.append(Failure(shown, f"{shown}: {reason}"))

    def _ingest_parts(self, path: Path, reader: Any) -> str:
        """A file of several documents (a mailbox, a message with attachments).

        The first document is stored under the file's path with the file's hash and queued last,
        so an interrupted run is not taken for a finished one; the others (``FILE#N...``) carry
        a hash of the file's hash and their path, and are skipped when unchanged.
        """
        shown = display_path(str(path))
        first = None
        try:
            content_hash = read_hash(file_hash(path), reader)
            existing, unchanged = self._stored(shown, content_hash)
            if unchanged:
                return "unchanged"
            stale = {p: i for p, i in self.store.documents_under([Path(shown)]).items() if p != shown}
            for document in reader.read_all(path):
                if first is None:
                    first = replace(document, path=str(path))
                    continue
                stale.pop(display_path(document.path), None)
                part_hash = span_hash(content_hash + document.path)
                part = self.store.document_by_path(display_path(document.path))
                if not self.unchanged(part, part_hash):
                    self.queue(document, part_hash, part is not None)
            self.remove(list(stale.values()))  # messages gone from a changed mailbox
        except ReaderError as error:
            self.report.failed.append(Failure(shown, display_path(str(error))))
            if first is None:
                return "failed"
        return self.queue(first, content_hash, existing is not None)

    def ingest_text(self, document: Document) -> str:
        """An in-memory document, keyed by its path, unless its text is unchanged."""
        content_hash = span_hash(document.text)
        existing, unchanged = self._stored(document.path, content_hash)
        if unchanged:
            return "unchanged"
        return self.queue(document, content_hash, existing is not None)

    def _stored(self, key: str, content_hash: str) -> tuple[dict | None, bool]:
        """The document stored under `key`, and whether it is unchanged (then counted so)."""
        existing = self.store.document_by_path(key)
        unchanged = self.unchanged(existing, content_hash)
        if unchanged:
            self.report.unchanged += 1
        return existing, unchanged

    def unchanged(self, existing: dict | None, content_hash: str) -> bool:
        """Same content, already chunked with the group's current settings."""
        if not existing or hash_key(existing["content_hash"]) != hash_key(content_hash):
            return False
        chunked = self.store.chunked_hash(existing["id"], self.group)
        return chunked is not None and hash_key(chunked) == hash_key(content_hash)

    def queue(self, document: Document, content_hash: str, exists: bool) -> str:
        """Hand the document's chunks to the batcher in pieces no bigger than a batch."""
        # A paged format (its reader counts `pages`) keeps page 1 even when it has one page.
        paged = "\f" in document.text or bool(document.metadata.get("pages"))
        starts = page_starts(document.text) if paged else []
        record = document_record(document, content_hash)
        first = True
        sections = split_document(document, self.settings, self.embedder)
        spans = next(sections)
        while spans is not None:
            following = next(sections, None)
            while True:
                take = self.batcher.room()
                piece, spans = spans[:take], spans[take:]
                last = not spans and following is None
                self.batcher.add(_Piece(record, content_hash, piece, starts, first, last))
                first = False
                if not spans:
                    break
            spans = following
        if exists:
            self.report.updated += 1
            return "updated"
        self.report.added += 1
        return "added"

    def remove(self, doc_ids: list[int]) -> None:
        remove_documents(self.store, doc_ids, self.report)

    def prune(self, roots: Sequence[Path], seen: set[str]) -> None:
        """Remove documents whose files are gone from disk. A document the walk did not reach but
        whose file is still there (a narrower --include, a new --exclude) is kept and reported:
        a mistyped glob must never empty an index; `rag rm` removes on purpose."""
        folders = [root for root in roots if root.is_dir()]
        # What lies in a folder the walk could not enter is kept: its failure is reported.
        unreadable = [Path(failure.path) for failure in self.report.failed]
        unseen = {
            path: doc_id
            for path, doc_id in self.store.documents_under(folders).items()
            if path not in seen
            and not _part_of(path, seen)
            and not any(Path(path).is_relative_to(folder) for folder in unreadable)
        }
        self.report.left_out = sorted(path for path in unseen if _still_there(path, folders))
        kept = set(self.report.left_out)
        gone = {path: doc_id for path, doc_id in unseen.items() if path not in kept}
        self.report.pruned = sorted(gone)
        self.remove(list(gone.values()))


@contextmanager
def open_run(
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
) -> Iterator[IngestRun]:
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
            report.vectors_deferred = not embed and store.defers_embedding
            settings = chunking_for(store, group, chunking)
            _start_group(store, embedder, group, settings)
            remember_roots(store, group, roots, file_filter)
            batcher = _Batcher(store, embedder, group, report, batch_chunks)
            yield IngestRun(store, batcher, settings, group, embedder, report)
            if embed:
                embedded = embed_pending(
                    store, embedder, progress=batcher.progress, batch_chunks=batch_chunks
                )
                report.embedded += embedded.embedded
            report.seconds = round(time.perf_counter() - started, 3)  # recorded in last_ingest
            finish(store, report)
        finally:
            store.close()
    report.seconds = round(time.perf_counter() - started, 3)


def _start_group(store: Backend, embedder: Embedder, group: str, settings: ChunkSettings) -> None:
    with store.transaction():
        record_model(store, embedder)
        if store.ensure_group(group, settings):
            # New settings: every document must be re-chunked, even after an interruption.
            store.forget_chunked(group)


def remember_roots(store: Backend, group: str, roots: Sequence[Path], file_filter: FileFilter) -> None:
    """Record the roots and the options they are read with, before any file is: an ingest
    interrupted later (Ctrl-C) keeps what it committed, and a bare `rag ingest` then reads the
    same roots the same way (it forgot them, and their patterns, when this came at the end)."""
    if not roots:
        return
    with store.transaction():
        known = json.loads(store.get_meta("roots", "[]") or "[]")
        store.set_meta("roots", json.dumps(sorted(set(known) | {str(r) for r in roots})))
        options = RootOptions(group, file_filter.include, file_filter.exclude)
        store.set_meta(ROOT_OPTIONS, merged_root_options(store.get_meta(ROOT_OPTIONS), roots, options))


def finish(store: Backend, report: IngestReport) -> None:
    """Sync every group's vectors, drop unused vectors, record the run."""
    for group in store.groups():
        count = store.sync_vectors(group, vector_params(store, group))
        if group == report.group:
            report.vectors = count
    with store.transaction():
        store.drop_unused_vectors()
        store.set_meta("last_ingest", json.dumps({**report.to_dict(), "failed": len(report.failed)}))


def remove_documents(store: Backend, doc_ids: list[int], report: IngestReport) -> None:
    if doc_ids:
        with store.transaction():
            report.removed += store.delete_documents(doc_ids)


def _still_there(path: str, folders: Sequence[Path]) -> bool:
    """Whether a document's file exists; one that cannot be looked at is taken as there. A folder
    now at its path is not it, nor a link to another file of the folder (read as that file)."""
    try:
        file = disk_path(path)
        if any(file.is_relative_to(folder) and link_into(file, folder) for folder in folders):
            return False
        return file.exists() and not file.is_dir()
    except OSError:
        return True


def _part_of(path: str, seen: set[str]) -> bool:
    """A document read from a file of several (``FILE#N``) whose file is still there."""
    return any(path[:i] in seen for i, char in enumerate(path) if char == PART_SEPARATOR)


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
        "title": _valid_title(meta.pop("title", None)),
        "metadata": meta,
    }


def _valid_title(title: Any) -> Any:
    """A title taken from a file name (a text file's, a table's) in valid UTF-8, as the name is."""
    return display_path(title) if isinstance(title, str) else title


def read_hash(digest: str, reader: Any) -> str:
    """The content hash stored for a file: its bytes' digest, and its reader's version once that
    is past "1", so a file whose reader now reads it differently is read again on the next
    ingest (every reader was at "1" before versions counted, so older indexes stay as they are)."""
    version = str(getattr(reader, "version", "1"))
    return digest if version == "1" else f"{digest}:{reader.file_type}-reader-{version}"


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


def reraise_interrupt(error: BaseException) -> None:
    """Raise the Ctrl-C behind `error`, if any: a reader's clean-up that fails while an
    interrupt unwinds (closing a file twice) must not turn the interrupt into one failed file."""
    seen = error.__context__
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            raise seen
        seen = seen.__context__


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
