"""Dense retrieval: embed the query with the index's model and search the group's vectors.

Vectors are unit length, so the inner product the vector index returns is the cosine
similarity, used as the hit score. Identical chunk texts share one embedding, so a vector
hit may stand for several chunks; each becomes its own hit with the same score.

`search_feedback` is the second pass of the default hybrid (`ragcli.retrieval.search`): the query
vector moved toward the stored vector of the best fused hit (Rocchio feedback, see
`feedback_vector`), searched again. It embeds nothing new, so it costs one more vector search.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ragcli.retrieval.base import ChunkFilter, EmbedderLoader
from ragcli.stages import stage
from ragcli.store.interface import Backend
from ragcli.store.chooser import as_backend
from ragcli.types import Chunk, Hit


class DenseRetriever:
    """Nearest-neighbour search over one group's vector index."""

    def __init__(self, store: Backend, group: str, embedder: EmbedderLoader) -> None:
        self.store = as_backend(store)
        self.group = group
        self._embedder = embedder
        self._dense = self.store.dense(group)

    def search(self, query: str, k: int, allowed: ChunkFilter | None = None) -> list[Hit]:
        """Up to `k` chunks by cosine similarity to the query, best first.

        Args:
            query: free text.
            k: how many hits at most.
            allowed: compiled metadata filters; only their documents' chunks are searched.
        """
        if k <= 0 or not query.strip():
            return []
        vector = self.embed(query)
        with stage("dense search"):
            return self.search_vector(vector, k, allowed)

    def embed(self, query: str) -> np.ndarray:
        """The query's vector (shape 1 x dimension), mapping the vector file meanwhile."""
        opening = self._dense.open_in_background()
        try:
            with stage("embed query"):
                return np.asarray(self._embedder().embed([query]), dtype=np.float32)
        finally:
            if opening is not None:
                opening.join()

    def search_feedback(
        self,
        vector: np.ndarray,
        feedback: list[int],
        k: int,
        allowed: ChunkFilter | None = None,
        weight: float = 0.6,
        known: Mapping[int, Chunk] | None = None,
    ) -> list[Hit]:
        """Search again with `vector` moved toward the stored vectors of the `feedback` chunks.

        Returns [] when none of those chunks has a vector (nothing to learn from).
        """
        with stage("feedback vector"):
            vectors = self.chunk_vectors(feedback, vector.shape[-1])
        if not len(vectors):
            return []
        return self.search_vector(feedback_vector(vector, vectors, weight), k, allowed, known)

    def chunk_vectors(self, chunk_ids: list[int], dimension: int) -> np.ndarray:
        """The stored embedding vectors of these chunks (those that have one), one per row."""
        return self._dense.vectors(chunk_ids, dimension)

    def search_vector(
        self,
        vector: np.ndarray,
        k: int,
        allowed: ChunkFilter | None = None,
        known: Mapping[int, Chunk] | None = None,
    ) -> list[Hit]:
        """Like `search`, for an already embedded query; chunks in `known` are not read again."""
        ranked = self.rank_vector(vector, k, allowed)
        known = known or {}
        chunks = dict(known)
        with stage("read chunks", "dense"):
            chunks.update(self.store.chunks([chunk_id for chunk_id, _ in ranked if chunk_id not in known]))
        return [
            Hit(chunks[cid], score, rank)
            for rank, (cid, score) in enumerate(ranked, start=1)
            if cid in chunks
        ]

    def rank_vector(
        self, vector: np.ndarray, k: int, allowed: ChunkFilter | None = None
    ) -> list[tuple[int, float]]:
        """The best `k` (chunk id, cosine) pairs for a query vector, without reading the chunks."""
        return self._dense.top_k(vector, k, allowed)


def feedback_vector(query: np.ndarray, feedback: np.ndarray, weight: float) -> np.ndarray:
    """Rocchio's relevance feedback on embeddings: query + weight * mean(feedback), unit length.

    Rocchio, "Relevance Feedback in Information Retrieval" (1971); applied to dense retrievers'
    vectors by Li et al., "Pseudo Relevance Feedback with Deep Language Models and Dense
    Retrievers: Successes and Pitfalls" (ACM TOIS 2023). Here the feedback is the best *fused*
    hit, so BM25's evidence reaches the dense side as well.
    """
    moved = np.asarray(query, dtype=np.float32).reshape(1, -1) + weight * feedback.mean(axis=0)
    norm = float(np.linalg.norm(moved))
    return moved / norm if norm > 0 else np.asarray(query, dtype=np.float32).reshape(1, -1)
