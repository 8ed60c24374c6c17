"""BM25 over the index's own postings (`ragcli.store.local.postings`): on disk, updated in the
ingest transaction, scored exactly like rank-bm25's `BM25Okapi(k1=1.2, b=0.75)`.

Chunks and queries go through the same analyser (`analysis.analyze`); a query's terms
are looked up literally, so no query text is ever parsed as syntax. The one difference
from rank-bm25 is the idf of a term in half the chunks or more (zero or negative in
Okapi's formula): it becomes 1e-6, so even a two-document collection ranks its matches,
where rank-bm25 keeps 0 or uses a fraction of the mean idf over its whole vocabulary.
`tests/test_bm25.py` checks bit-for-bit equality on real text.

That is the local store's engine; an index on Milvus scores with Milvus's BM25 function
over the same terms (`ragcli.store.milvus.backend`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Hashable, Sequence

from ragcli.retrieval.base import ChunkFilter
from ragcli.store.chooser import as_backend
from ragcli.types import Hit

if TYPE_CHECKING:
    from ragcli.store.interface import Backend


class BM25Retriever:
    """Keyword retrieval over one group (`Backend.lexical`: the local postings, kept in memory
    between queries, or Milvus's BM25 function)."""

    def __init__(self, store: Backend, group: str) -> None:
        self.store = as_backend(store)
        self.group = group
        self._lexical = self.store.lexical(group)

    def search(self, query: str, k: int, allowed: ChunkFilter | None = None) -> list[Hit]:
        """Up to `k` chunks by BM25 score (higher is better), best first.

        Args:
            query: free text; analysed like the chunks were.
            k: how many hits at most.
            allowed: compiled metadata filters; only their documents' chunks can match.
        """
        return self.search_many([query], k, allowed)[0]

    def term_shares(self, terms: Sequence[str]) -> dict[str, float]:
        """Each analysed term's share of the group's chunks (`LexicalSearch.term_shares`), from
        the postings this retriever keeps: a question's terms were just read by its search."""
        return self._lexical.term_shares(terms)

    def search_cached(self, query: str, k: int, version: Hashable) -> list[Hit] | None:
        """`search` without filters answered from memory, read at the store's `version`
        (just read); None when the store must be read (`LexicalSearch.search_cached`)."""
        if k <= 0:
            return []
        found = self._lexical.search_cached([query], k, version)
        return None if found is None else Hit.ranked(found[0])

    def search_many(
        self, queries: Sequence[str], k: int, allowed: ChunkFilter | None = None
    ) -> list[list[Hit]]:
        """`search` for several queries at once: one snapshot, one read of the hit chunks.

        Chunks already read for an earlier query of this retriever are reused while the
        database is unchanged (`ragcli.store.local.chunkcache`).
        """
        if k <= 0:
            return [[] for _ in queries]
        found = self._lexical.search_many(queries, k, allowed)
        return [Hit.ranked(rows) for rows in found]
