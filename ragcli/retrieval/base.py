"""The Retriever protocol and what every retriever shares (the registry is `ragcli.retrieval.RETRIEVERS`).

A retriever answers one query over one chunk group of an open store (`Backend`). Filters arrive
already compiled (`ChunkFilter`), so every retriever applies them the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

from ragcli.store.interface import ChunkFilter
from ragcli.types import Hit

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder
    from ragcli.store.interface import Backend

# Compiled by the index's backend (`Backend.compile_filter`); re-exported for retrievers.
__all__ = ["ChunkFilter", "EmbedderLoader", "Retriever", "RetrieverFactory"]


class Retriever(Protocol):
    """Finds the chunks that best match a query."""

    def search(self, query: str, k: int, allowed: ChunkFilter | None = None) -> list[Hit]:
        """Up to `k` hits, best first (rank from 1), restricted to `allowed` documents when given."""
        ...


class EmbedderLoader(Protocol):
    """Returns the index's query embedder, loading it on first use."""

    def __call__(self) -> Embedder: ...


RetrieverFactory = Callable[["Backend", str, EmbedderLoader], Retriever]
