"""Chunks read once and kept between queries of one process while the database is unchanged.

A warm BM25 query scores in well under a millisecond; reading its hits' rows (a join with
the documents and a JSON parse of each document's metadata) cost as much again. Hits of a
stream of queries repeat, so `ChunkCache` keeps the `Chunk`s it has read, keyed by the
database's version: SQLite's `PRAGMA data_version` (changes when another connection
commits) with this connection's `total_changes` (its own writes). Any change to the
database, by any process, empties the cache, so a hit is never staler than the snapshot
it was read in. At most `max_chunks` are kept (then the cache restarts; 10,000 chunks of
256 tokens hold about 15 MB). The version is per connection: one cache serves one `Store`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ragcli.types import Chunk

if TYPE_CHECKING:
    from ragcli.store.local.database import Store


class ChunkCache:
    """`Store.chunks` with memory; call inside the snapshot the chunk ids came from.

    The cached `Chunk`s (and their metadata dicts) are shared by every hit that returns them:
    read them, never change them.
    """

    def __init__(self, max_chunks: int = 10_000) -> None:
        self.max_chunks = max_chunks
        self._chunks: dict[int, Chunk] = {}
        self._version: tuple[int, int, int] | None = None

    def held(self, version: tuple[int, int, int]) -> dict[int, Chunk]:
        """The chunks kept for this `store.version()` (none if it changed): a warm query looks
        its hits up here first and calls `chunks` only for a miss."""
        return self._chunks if version == self._version else {}

    def chunks(
        self, store: "Store", ids: Iterable[int], version: tuple[int, int, int] | None = None
    ) -> dict[int, Chunk]:
        """Chunks by id (ids no longer stored are left out), with their document's path and metadata.

        Args:
            version: `store.version()` if the caller just read it in this snapshot.
        """
        if version is None:
            version = store.version()
        if version != self._version:
            self._chunks.clear()
            self._version = version
        cached = self._chunks
        wanted = ids if isinstance(ids, list) else list(ids)
        try:  # every hit read before (the common case of a warm stream of queries)
            return {chunk_id: cached[chunk_id] for chunk_id in wanted}  # in first-seen order
        except KeyError:
            pass
        wanted = list(dict.fromkeys(wanted))
        missing = [chunk_id for chunk_id in wanted if chunk_id not in cached]
        found = store.chunks(missing) if missing else {}
        found.update((chunk_id, cached[chunk_id]) for chunk_id in wanted if chunk_id in cached)
        if missing:
            if len(cached) + len(missing) > self.max_chunks:
                cached.clear()
            if len(missing) <= self.max_chunks:  # a batch larger than the cache is not kept
                cached.update((chunk_id, found[chunk_id]) for chunk_id in missing if chunk_id in found)
        return {chunk_id: found[chunk_id] for chunk_id in wanted if chunk_id in found}
