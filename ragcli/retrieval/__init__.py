"""Retrieval: BM25 and dense search through the index's store backend, fusion, filters.

Submodules are imported where needed so that a BM25 query never loads the dense stack.
The registry of built-in retrievers lives here, above the retrievers it builds (each of
which imports `ragcli.retrieval.base`), so the imports run one way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragcli.retrieval.base import EmbedderLoader, Retriever, RetrieverFactory

if TYPE_CHECKING:
    from ragcli.store.interface import Backend


def _bm25(store: Backend, group: str, embedder: EmbedderLoader) -> Retriever:
    from ragcli.retrieval.bm25 import BM25Retriever

    return BM25Retriever(store, group)


def _dense(store: Backend, group: str, embedder: EmbedderLoader) -> Retriever:
    from ragcli.retrieval.dense import DenseRetriever

    return DenseRetriever(store, group, embedder)


# Built-in retrievers by mode name; "hybrid" fuses these two and "llm" selects among
# hybrid candidates (see ragcli.retrieval.search). Factories import lazily so a BM25 query never
# loads the dense stack.
RETRIEVERS: dict[str, RetrieverFactory] = {"bm25": _bm25, "dense": _dense}
