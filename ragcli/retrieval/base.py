"""The Retriever protocol and the registry of built-in retrievers.

A retriever answers one query over one chunk group of an open `Store`. Filters arrive
already compiled (`ChunkFilter`), so every retriever applies them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ragcli.types import Hit


@dataclass(frozen=True)
class ChunkFilter:
    """Compiled metadata filters: a WHERE clause over `documents d` and its parameters."""

    where: str
    params: tuple[Any, ...] = ()


class Retriever(Protocol):
    """Finds the chunks that best match a query."""

    def search(self, query: str, k: int, allowed: ChunkFilter | None = None) -> list[Hit]:
        """Up to `k` hits, best first (rank from 1), restricted to `allowed` documents when given."""
        ...


class EmbedderLoader(Protocol):
    """Returns the index's query embedder, loading it on first use."""

    def __call__(self) -> Any: ...


RetrieverFactory = Callable[[Any, str, EmbedderLoader], Retriever]


def _bm25(store: Any, group: str, embedder: EmbedderLoader) -> Retriever:
    from ragcli.retrieval.bm25 import BM25Retriever

    return BM25Retriever(store, group)


def _dense(store: Any, group: str, embedder: EmbedderLoader) -> Retriever:
    from ragcli.retrieval.dense import DenseRetriever

    return DenseRetriever(store, group, embedder)


# Built-in retrievers by mode name; "hybrid" fuses these two and "llm" selects among
# hybrid candidates (see ragcli.query). Factories import lazily so a BM25 query never
# loads the dense stack.
RETRIEVERS: dict[str, RetrieverFactory] = {"bm25": _bm25, "dense": _dense}
