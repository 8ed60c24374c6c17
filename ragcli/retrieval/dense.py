"""Dense retrieval: embed the query with the index's model and search the group's vectors.

Vectors are unit length, so the inner product the vector index returns is the cosine
similarity, used as the hit score. Identical chunk texts share one embedding, so a vector
hit may stand for several chunks; each becomes its own hit with the same score.

`search_feedback` is the second pass of the default hybrid (`ragcli.retrieval.search`): the query
vector moved toward the stored vector of the best fused hit (Rocchio feedback, see
`feedback_vector`), searched again. It embeds nothing new, so it costs one more vector search.
"""

from __future__ import annotations

import threading
from typing import Mapping

import numpy as np

from ragcli.retrieval.base import ChunkFilter, EmbedderLoader
from ragcli.store import Store, open_vector_file
from ragcli.store.vectors import VectorIndex
from ragcli.types import Chunk, Hit


class DenseRetriever:
    """Nearest-neighbour search over one group's vector index."""

    def __init__(self, store: Store, group: str, embedder: EmbedderLoader) -> None:
        self.store = store
        self.group = group
        self._embedder = embedder
        self._index: VectorIndex | None = None

    def vector_index(self) -> VectorIndex:
        """The group's vector index, loaded once."""
        if self._index is None:
            self._index = self.store.vector_index(self.group)
        return self._index

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
        from ragcli.stages import stage

        with stage("dense search"):
            return self.search_vector(vector, k, allowed)

    def embed(self, query: str) -> np.ndarray:
        """The query's vector (shape 1 x dimension), mapping the vector file meanwhile."""
        opening = self._open_in_background()
        from ragcli.stages import stage

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
        vectors = self.chunk_vectors(feedback, vector.shape[-1])
        if not len(vectors):
            return []
        return self.search_vector(feedback_vector(vector, vectors, weight), k, allowed, known)

    def chunk_vectors(self, chunk_ids: list[int], dimension: int) -> np.ndarray:
        """The stored embedding vectors of these chunks (those that have one), one per row."""
        return self.store.chunk_vectors(chunk_ids, dimension)

    def _open_in_background(self) -> threading.Thread | None:
        """Map the vector file while the query is embedded.

        On a cold start both steps cost about 0.1 s (importing faiss and mapping the file;
        loading the ONNX model), and they overlap: 0.34 s -> 0.27 s together here. The
        database check stays on this thread (the connection is not shared); a file that
        fails to open is left to `vector_index`, which rebuilds it from the database.
        """
        if self._index is not None:
            return None
        path = self.store.current_vector_file(self.group)
        if path is None:  # stale or missing: rebuilt from the database on this thread
            return None

        def open_file() -> None:
            try:
                self._index = open_vector_file(path)
            except Exception:  # noqa: BLE001 - vector_index() retries, then rebuilds from the database
                self._index = None

        thread = threading.Thread(target=open_file, name="ragcli-open-vectors", daemon=True)
        thread.start()
        return thread

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
        index = self.vector_index()
        allowed_chunks = self._allowed_chunks(allowed) if allowed is not None and allowed.where else None
        if len(index) == 0 or allowed_chunks == {}:
            return []
        allowed_ids = None if allowed_chunks is None else np.fromiter(set(allowed_chunks.values()), np.int64)
        # Over-fetch: vectors whose chunks were deleted by a concurrent ingest map to nothing.
        scores, ids = index.search(vector, k + max(10, k // 2), allowed_ids)
        pairs = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
        owners = self.store.chunk_ids_for_embeddings(self.group, [i for i, _ in pairs])
        ranked: list[tuple[int, float]] = []
        for embedding_id, score in pairs:
            ranked.extend(
                (chunk_id, score)
                for chunk_id in owners.get(embedding_id, [])
                if allowed_chunks is None or chunk_id in allowed_chunks
            )
        return ranked[:k]

    def _allowed_chunks(self, allowed: ChunkFilter) -> dict[int, int]:
        """Chunk id -> embedding id of the group's chunks whose documents pass the filters."""
        return self.store.filtered_embedding_ids(self.group, allowed.where, allowed.params)


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
