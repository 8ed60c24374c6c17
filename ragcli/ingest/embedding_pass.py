"""Embedding the chunks an ingest committed without vectors: searchable first, embedded next.

`ragcli.ingest.pipeline` commits documents, chunks and BM25 postings batch by batch with no
vector for new chunk texts, so BM25 finds a new file within seconds; `embed_pending` then
embeds what is still missing, oldest chunks first, one transaction per batch. A kill loses at
most the batch in flight: the next `rag embed` (or ingest) starts from the chunks still
without a vector, and a text is stored once (embeddings are unique by hash).

While the model embeds batch N (onnxruntime releases the GIL), batch N-1 is written on a
second thread, so SQLite stays off the embedding's critical path; the main thread touches
the database only once that writer is done, so the connection is never used by two threads
at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder
    from ragcli.store.interface import Backend

# A batch (one transaction) is about BATCH_SECONDS of embedding, adapted to the measured speed,
# and never under FIRST_BATCH chunks: texts are sorted by length within a batch so each forward
# pass pads little, and on SciFact chunks the padded tokens were 7.3% over the real ones when
# sorting within 64 chunks, 4.6% within 128 and 2.2% within 256 (as low as sorting them all).
# A kill loses at most the batch in flight. Progress is told per slice of EMBED_SLICE texts.
BATCH_SECONDS = 10.0
FIRST_BATCH = 256
MOST_PER_BATCH = 2048
EMBED_SLICE = 64


@dataclass
class EmbedReport:
    """What one embedding pass did."""

    embedded: int = 0  # new vectors computed
    chunks: int = 0  # chunks that got a vector
    remaining: int = 0  # chunks still without one (set by `embed_index`)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def pending_count(store: Backend) -> int:
    """Chunks of every group still without a vector."""
    total = 0
    for group in store.groups():
        embedded, chunks = store.embedding_coverage(group)
        total += chunks - embedded
    return total


def tell(progress: Any, name: str, *args: Any) -> None:
    """Call an optional progress method (a receiver may implement only `start`/`advance`)."""
    method = getattr(progress, name, None)
    if method is not None:
        method(*args)


def embed_pending(
    store: Backend,
    embedder: Embedder,
    *,
    progress: Any = None,
    batch_chunks: int = MOST_PER_BATCH,
) -> EmbedReport:
    """Embed every group's chunks that have no vector yet, batch by batch (see the module doc).

    Args:
        store: an open backend, under the index's write lock.
        embedder: the index's embedding model.
        progress: told `embedding_started(total chunks)` and `embedded(chunks)` if it listens.
        batch_chunks: most chunks per batch (one transaction).
    """
    report = EmbedReport()
    if not store.defers_embedding:
        return report
    total = pending_count(store)
    if not total:
        return report
    tell(progress, "embedding_started", total)
    writer = _Writer(store)
    try:
        for group in store.groups():
            _embed_group(store, embedder, group, report, writer, progress, batch_chunks)
    finally:
        writer.join()
    return report


def _embed_group(store, embedder, group, report, writer, progress, batch_chunks) -> None:
    """Embed one group's pending chunks. The database is read only while no write is in
    flight: the next batch and its known vectors are read before the current batch's write
    starts; a text the current batch embeds counts as known for the next one (it is stored
    before the next write runs), so no text is embedded twice."""
    limit = min(FIRST_BATCH, batch_chunks)
    start = 0
    texts, rows, last = store.pending_embeddings(group, limit, start)
    known = store.known_vectors(texts)
    while rows:
        missing = sorted((h for h in texts if h not in known), key=lambda h: len(texts[h]))
        started = time.monotonic()
        vectors = _embed_sorted(embedder, [texts[h] for h in missing], progress)
        seconds = time.monotonic() - started
        writer.join()  # the previous batch is committed: the connection is free again
        report.embedded += len(missing)
        report.chunks += rows
        tell(progress, "embedded", rows - len(missing))  # chunks whose text was embedded already
        if missing and seconds > 0:
            floor = min(FIRST_BATCH, batch_chunks)  # a smaller --batch-size is the user's choice
            limit = max(floor, min(batch_chunks, int(len(missing) / seconds * BATCH_SECONDS)))
        batch = {**dict.fromkeys(known), **dict(zip(missing, vectors))}
        next_texts, next_rows, next_last = store.pending_embeddings(group, limit, last)
        next_known = store.known_vectors(next_texts)
        next_known.update(dict.fromkeys(h for h in next_texts if h in batch))
        writer.write(group, batch, start, last)
        start = last
        texts, rows, last, known = next_texts, next_rows, next_last, next_known


def _embed_sorted(embedder: Embedder, texts: list[str], progress: Any) -> list[Any]:
    """Embed texts already sorted by length, slice by slice, telling the progress receiver."""
    vectors: list[Any] = []
    for start in range(0, len(texts), EMBED_SLICE):
        part = texts[start : start + EMBED_SLICE]
        vectors.extend(embedder.embed(part))
        tell(progress, "embedded", len(part))
    return vectors


class _Writer:
    """Commits one batch of vectors on a background thread; errors surface on `join`."""

    def __init__(self, store: Backend) -> None:
        self.store = store
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def write(self, group: str, vectors: Mapping[str, Any], after: int, last: int) -> None:
        self.join()

        def run() -> None:
            try:
                self.store.attach_vectors(group, vectors, after, last)
            except BaseException as error:  # noqa: BLE001 - re-raised on the caller's thread
                self._error = error

        self._thread = threading.Thread(target=run, name="ragcli-vector-writer", daemon=True)
        self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error
