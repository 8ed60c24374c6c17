"""BM25 over SQLite FTS5: on disk, updated in the ingest transaction, no index to load.

Each chunk's FTS5 row holds its pre-analysed terms (`analysis.analyze`), so FTS5's own
tokenizer only splits on spaces and FTS5's `bm25()` (k1 = 1.2, b = 0.75, idf
log((N - n + 0.5) / (n + 0.5))) scores exactly like rank-bm25's `BM25Okapi` with the same
parameters, except that FTS5 floors a negative idf (a term in more than half the rows)
at 1e-6 where rank-bm25 uses a fraction of the mean idf. `tests/test_bm25.py` checks the
equality on real text.
"""

from __future__ import annotations

from ragcli.retrieval.analysis import analyze
from ragcli.retrieval.base import ChunkFilter
from ragcli.store import Store, fts_table
from ragcli.types import Hit


def match_expression(query: str) -> str:
    """The FTS5 MATCH string for a query: its analysed terms, quoted, joined with OR; "" if none.

    Quoting makes every term a literal (no FTS5 operators from user text); a double quote
    inside a term is doubled, as FTS5 strings require.
    """
    terms = analyze(query)
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


class BM25Retriever:
    """Keyword retrieval over one group's FTS5 table."""

    def __init__(self, store: Store, group: str) -> None:
        self.store = store
        self.group = group
        self._table = fts_table(group)

    def search(self, query: str, k: int, allowed: ChunkFilter | None = None) -> list[Hit]:
        """Up to `k` chunks by BM25 score (higher is better), best first.

        Args:
            query: free text; analysed like the chunks were.
            k: how many hits at most.
            allowed: compiled metadata filters, joined in SQL.
        """
        expression = match_expression(query)
        if not expression or k <= 0:
            return []
        rows = self._rows(expression, k, allowed)
        chunks = self.store.chunks([chunk_id for chunk_id, _ in rows])
        # FTS5's bm25() is negated so that ascending order is best first.
        return [Hit(chunks[chunk_id], -cost, rank) for rank, (chunk_id, cost) in enumerate(rows, start=1)
                if chunk_id in chunks]

    def _rows(self, expression: str, k: int, allowed: ChunkFilter | None) -> list[tuple[int, float]]:
        table = self._table
        if allowed is None or not allowed.where:
            # Ordering by the selected alias computes bm25() once per matching row, not twice.
            sql = (f"SELECT rowid, bm25({table}) AS cost FROM {table} WHERE {table} MATCH ? "
                   "ORDER BY cost LIMIT ?")
            return self.store.db.execute(sql, [expression, k]).fetchall()
        sql = (f"SELECT {table}.rowid, bm25({table}) AS cost FROM {table} "
               f"JOIN chunks c ON c.id = {table}.rowid JOIN documents d ON d.id = c.doc_id "
               f"WHERE {table} MATCH ? AND ({allowed.where}) ORDER BY cost LIMIT ?")
        return self.store.db.execute(sql, [expression, *allowed.params, k]).fetchall()
