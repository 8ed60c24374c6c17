"""Chunks read once and kept between queries of one process while the database is unchanged.

A warm BM25 query scores in well under a millisecond; reading its hits' rows (a join with
the documents and a JSON parse of each document's metadata) cost as much again. Hits of a
stream of queries repeat, so `ChunkCache` keeps the `Chunk`s it has read, keyed by the
database's version: SQLite's `PRAGMA data_version` (changes when another connection
commits) with this connection's `total_changes` (its own writes). Any change to the
database, by any process, empties the cache, so a hit is never staler than the snapshot
it was read in. At most `max_chunks` are kept (then the cache restarts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ragcli.types import Chunk

if TYPE_CHECKING:
    from ragcli.store import Store


class ChunkCache:
    """`Store.chunks` with memory; call inside the snapshot the chunk ids came from."""

    def __init__(self, max_chunks: int = 50_000) -> None:
        self.max_chunks = max_chunks
        self._chunks: dict[int, Chunk] = {}
        self._version: tuple[int, int] | None = None

    def chunks(self, store: "Store", ids: Iterable[int]) -> dict[int, Chunk]:
        """Chunks by id (ids no longer stored are left out), with their document's path and metadata."""
        version = (store.db.execute("PRAGMA data_version").fetchone()[0], store.db.total_changes)
        if version != self._version:
            self._chunks.clear()
            self._version = version
        cached = self._chunks
        wanted = list(dict.fromkeys(ids))
        missing = [chunk_id for chunk_id in wanted if chunk_id not in cached]
        if missing:
            if len(cached) + len(missing) > self.max_chunks:
                cached.clear()
            cached.update(store.chunks(missing))
        return {chunk_id: cached[chunk_id] for chunk_id in wanted if chunk_id in cached}
