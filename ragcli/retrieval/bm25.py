"""BM25 over the index's own postings (`ragcli.store.postings`): on disk, updated in the
ingest transaction, scored exactly like rank-bm25's `BM25Okapi(k1=1.2, b=0.75)`.

Chunks and queries go through the same analyser (`analysis.analyze`); a query's terms
are looked up literally, so no query text is ever parsed as syntax. The one difference
from rank-bm25 is the idf of a term in half the chunks or more (zero or negative in
Okapi's formula): it becomes 1e-6, so even a two-document collection ranks its matches,
where rank-bm25 keeps 0 or uses a fraction of the mean idf over its whole vocabulary.
`tests/test_bm25.py` checks bit-for-bit equality on real text.
"""

from __future__ import annotations

from typing import Sequence

from ragcli.analysis import analyze
from ragcli.retrieval.base import ChunkFilter
from ragcli.store import Store
from ragcli.store.chunkcache import ChunkCache
from ragcli.store.postings import PostingsReader
from ragcli.types import Hit


class BM25Retriever:
    """Keyword retrieval over one group's postings (kept in memory between queries)."""

    def __init__(self, store: Store, group: str) -> None:
        self.store = store
        self.group = group
        self._reader = PostingsReader()
        self._chunks = ChunkCache()

    def search(self, query: str, k: int, allowed: ChunkFilter | None = None) -> list[Hit]:
        """Up to `k` chunks by BM25 score (higher is better), best first.

        Args:
            query: free text; analysed like the chunks were.
            k: how many hits at most.
            allowed: compiled metadata filters; only their documents' chunks can match.
        """
        return self.search_many([query], k, allowed)[0]

    def search_many(
        self, queries: Sequence[str], k: int, allowed: ChunkFilter | None = None
    ) -> list[list[Hit]]:
        """`search` for several queries at once: one snapshot, one read of the hit chunks.

        Chunks already read for an earlier query of this retriever are reused while the
        database is unchanged (`ragcli.store.chunkcache`).
        """
        if k <= 0:
            return [[] for _ in queries]
        with self.store.snapshot():  # filters, statistics and postings from the same commit
            allowed_ids = self._allowed_ids(allowed) if allowed is not None and allowed.where else None
            if allowed_ids is not None and not len(allowed_ids):
                return [[] for _ in queries]
            ranked = [
                self._reader.top_k(self.store.db, self.group, analyze(query), k, allowed_ids)
                for query in queries
            ]
            chunks = self._chunks.chunks(self.store, (chunk_id for rows in ranked for chunk_id, _ in rows))
        return [
            [
                Hit(chunks[chunk_id], score, rank)
                for rank, (chunk_id, score) in enumerate(rows, start=1)
                if chunk_id in chunks
            ]
            for rows in ranked
        ]

    def _allowed_ids(self, allowed: ChunkFilter):
        import numpy as np

        ids = self.store.filtered_chunk_ids(self.group, allowed.where, allowed.params)
        return np.asarray(ids, dtype=np.int64)
