"""Batches of document pieces: chunks collected across documents and committed together.

`Batcher` (`_Batcher`) takes the split documents of an ingest (`ragcli.ingest.pipeline`) and
writes them a batch at a time, one transaction each: documents, chunks and BM25 postings,
with the stored vector of every chunk text seen before. Where the store can hold a chunk
without a vector (the local store) new texts get none yet: `ragcli.ingest.embedding_pass`
embeds them after, so the text is searchable first. A store that cannot (Milvus) has each
batch's new texts embedded before it is written.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragcli.ingest.splitting import page_at
from ragcli.store.interface import Backend, DocumentPiece, PieceChunk
from ragcli.types import Span

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder

# Commit at least this often (seconds of work), whatever --batch-size says, so a kill early
# in a run keeps its progress; the first batch is small for the same reason.
COMMIT_SECONDS = 3.0
FIRST_BATCH = 16


@dataclass
class _Piece:
    """Consecutive chunks of one document; the first piece replaces its old chunks, the last
    marks it complete."""

    record: dict
    content_hash: str
    spans: list[Span]
    page_starts: list[int]
    first: bool
    last: bool
    span_hashes: list[str] = field(default_factory=list)


EMBED_SLICE = 32  # chunks per progress report while a batch is embedded


class _Batcher:
    """Collects chunks of split documents and writes them in batches (see the module doc).

    A batch is committed when it holds `size` chunks or when COMMIT_SECONDS have passed since
    the last commit; the chunk limit also adapts to the measured speed, so one batch is a few
    seconds of work on any machine. `report` (an `IngestReport`) counts what was written.
    """

    def __init__(self, store: Backend, embedder: Embedder, group: str, report: Any, size: int):
        self.store, self.embedder, self.group, self.report, self.size = store, embedder, group, report, size
        self.pending: list[_Piece] = []
        self.count = 0
        self.progress: Any = None  # optional `embedding(n)` / `embedded(n)` receiver
        self.limit = min(size, FIRST_BATCH)
        self.last_commit = time.monotonic()
        # Text first, vectors after (`embed_pending`) where the store can hold a chunk without one.
        self.text_only = store.defers_embedding

    def room(self) -> int:
        return max(1, self.limit - self.count)

    def add(self, piece: _Piece) -> None:
        piece.span_hashes = [span_hash(span.text) for span in piece.spans]
        self.pending.append(piece)
        self.count += len(piece.spans)
        if self.count >= self.limit or time.monotonic() - self.last_commit >= COMMIT_SECONDS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        hashes = {h: span.text for item in self.pending for span, h in zip(item.spans, item.span_hashes)}
        known = self.store.known_vectors(hashes)
        missing = [h for h in hashes if h not in known]
        if self.text_only:
            self._write_text(known, missing)
            return
        started = time.monotonic()
        vectors = self._embed([hashes[h] for h in missing]) if missing else None
        seconds = time.monotonic() - started
        if missing:
            known.update(zip(missing, vectors))
        self.store.write([self._piece(item) for item in self.pending], known)
        self.report.chunks += self.count
        self.report.embedded += len(missing)
        self.report.reused += sum(len(item.spans) for item in self.pending) - len(missing)
        if missing and seconds > 0:
            self.limit = max(FIRST_BATCH, min(self.size, int(len(missing) / seconds * COMMIT_SECONDS)))
        self.pending, self.count = [], 0
        self.last_commit = time.monotonic()

    def _write_text(self, known: dict, missing: list[str]) -> None:
        """Commit the batch's documents, chunks and postings; new texts get no vector yet."""
        self.store.write([self._piece(item) for item in self.pending], {**known, **dict.fromkeys(missing)})
        self.report.chunks += self.count
        self.report.reused += sum(1 for item in self.pending for h in item.span_hashes if h in known)
        if time.monotonic() - self.last_commit < COMMIT_SECONDS / 2:
            self.limit = min(self.size, self.limit * 2)  # text alone is quick: bigger batches
        self.pending, self.count = [], 0
        self.last_commit = time.monotonic()

    def _embed(self, texts: list[str]):
        """Embed, telling the progress receiver (if it listens) as slices finish.

        Embedding is where ingest spends its time, so progress counts chunks embedded,
        not files read (files are read long before their batch is embedded).
        """
        report = getattr(self.progress, "embedded", None)
        if report is None:
            return self.embedder.embed(texts)
        import numpy as np

        self.progress.embedding(len(texts))
        parts = []
        for start in range(0, len(texts), EMBED_SLICE):
            parts.append(np.asarray(self.embedder.embed(texts[start : start + EMBED_SLICE])))
            report(len(parts[-1]))
        return np.concatenate(parts)

    def _piece(self, item: _Piece) -> DocumentPiece:
        chunks = [
            PieceChunk(
                order=span.order,
                text=span.text,
                start=span.start,
                end=span.end,
                page=page_at(item.page_starts, span.start) if item.page_starts else None,
                hash=chunk_hash,
            )
            for span, chunk_hash in zip(item.spans, item.span_hashes)
        ]
        return DocumentPiece(item.record, self.group, item.content_hash, chunks, item.first, item.last)


def span_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
