"""Searching the Milvus backend's chunks: BM25 (Milvus's function over ragcli's terms) and vectors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Hashable, Sequence

from ragcli.store.interface import ChunkFilter
from ragcli.store.milvus.schema import CHUNK_FIELDS, CHUNKS, chunk_from_row, quoted
from ragcli.types import Chunk

if TYPE_CHECKING:
    import numpy as np


class MilvusLexical:
    """Milvus's BM25 function over ragcli's own terms of one group's chunks."""

    def __init__(self, client, group: str) -> None:
        self.client = client
        self.group = group

    def search_cached(self, queries: Sequence[str], k: int, version: Hashable) -> None:
        """Nothing is kept between queries: every search asks Milvus."""
        return None

    def term_shares(self, terms: Sequence[str]) -> dict[str, float]:
        """Milvus keeps its term statistics to itself: no share is known."""
        return {}

    def search_many(
        self, queries: Sequence[str], k: int, allowed: ChunkFilter | None
    ) -> list[list[tuple[Chunk, float]]]:
        from ragcli.analysis import term_string

        results: list[list[tuple[Chunk, float]]] = [[] for _ in queries]
        terms = [term_string(query) for query in queries]
        asked = [i for i, t in enumerate(terms) if t]
        expr = _group_filter(self.group, allowed)
        if not asked or expr is None:
            return results
        found = self.client.search(
            CHUNKS,
            data=[terms[i] for i in asked],
            anns_field="sparse",
            limit=k,
            filter=expr,
            output_fields=CHUNK_FIELDS,
            search_params={"metric_type": "BM25"},
        )
        for i, hits in zip(asked, found):
            # Milvus Lite reports -score as the distance, a server the score: both best first.
            results[i] = [
                (chunk_from_row(hit["entity"] | {"id": hit["id"]}), abs(float(hit["distance"])))
                for hit in hits
            ]
        return results


class MilvusDense:
    """One group's vectors in Milvus (FLAT index, inner product on unit vectors = cosine)."""

    def __init__(self, client, group: str) -> None:
        self.client = client
        self.group = group

    def open_in_background(self):
        return None

    def top_k(self, vector: np.ndarray, k: int, allowed: ChunkFilter | None) -> list[tuple[int, float]]:
        import numpy as np

        expr = _group_filter(self.group, allowed)
        if expr is None:
            return []
        found = self.client.search(
            CHUNKS,
            data=[np.asarray(vector, dtype=np.float32).reshape(-1).tolist()],
            anns_field="vector",
            limit=k,
            filter=expr,
            output_fields=["id"],
            search_params={"metric_type": "IP"},
        )
        return [(int(hit["id"]), float(hit["distance"])) for hit in found[0]]

    def vectors(self, chunk_ids: Sequence[int], dimension: int) -> np.ndarray:
        import numpy as np

        if not chunk_ids:
            return np.zeros((0, dimension), dtype=np.float32)
        rows = self.client.query(CHUNKS, ids=[int(i) for i in chunk_ids], output_fields=["vector"])
        return np.asarray([row["vector"] for row in rows], dtype=np.float32).reshape(-1, dimension)


def _group_filter(group: str, allowed: ChunkFilter | None) -> str | None:
    """The group's chunks passing `allowed`; None when no document passes."""
    expr = f"chunk_group == {quoted(group)}"
    if allowed is None or not allowed.where:
        return expr
    if allowed.where == "doc_id in []":
        return None
    return f"{expr} and {allowed.where}"
