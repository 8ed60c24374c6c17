"""The local backend: SQLite (documents, chunks, BM25 postings, vectors) plus FAISS files.

`LocalBackend` wraps an open `Store`; the BM25 engine (`ragcli.store.local.postings`) and the
vector files (`ragcli.store.local.vectors`, `ragcli.store.local.ann`) stay behind it, so retrieval and
ingest see only the `ragcli.store.interface.Backend` interface.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Hashable, Iterable, Mapping, Sequence

from ragcli.store.directory import DATABASE_NAME, DirectorySettings, directory_size
from ragcli.store.local.database import Store
from ragcli.store.local.vector_files import VECTORS_DIR, open_vector_file
from ragcli.store.interface import ChunkFilter, DocumentPiece
from ragcli.store.local.chunkcache import ChunkCache
from ragcli.stages import stage

if TYPE_CHECKING:
    import numpy as np

    from ragcli.store.local.vectors import VectorIndex
    from ragcli.types import Chunk

log = logging.getLogger(__name__)


class LocalBackend(DirectorySettings):
    """An index whose content lives in its own directory (the default backend)."""

    kind = "local"
    uri = None
    # Chunks may be committed before their vectors (searchable by BM25 first, embedded next).
    defers_embedding = True

    def __init__(self, store: Store) -> None:
        self.store = store
        self.path = store.path

    def version(self) -> Hashable | None:
        """`Store.version`: changes with every commit, of this process or another."""
        return self.store.version()

    @property
    def db(self):
        """The SQLite connection (tests and the local store's own modules read it)."""
        return self.store.db

    # -- the index directory ------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        return self.store.get_meta(key, default)

    def forget_chunked(self, group: str) -> None:
        self.store.forget_chunked(group)

    def transaction(self) -> AbstractContextManager[None]:
        return self.store.transaction()

    def snapshot(self) -> AbstractContextManager[None]:
        return self.store.snapshot()

    def check_integrity(self) -> None:
        self.store.check_integrity()

    def close(self) -> None:
        self.store.close()

    # -- ingest -----------------------------------------------------------------------
    def bind_model(self, model_id: str, fingerprint: str, dimension: int) -> None:
        """Nothing to prepare: the meta `record_model` writes is all the local store needs."""

    def document_by_path(self, path: str) -> dict[str, Any] | None:
        return self.store.document_by_path(path)

    def chunked_hash(self, doc_id: int, group: str) -> str | None:
        return self.store.chunked_hash(doc_id, group)

    def known_vectors(self, hashes: Iterable[str]) -> dict[str, int]:
        """Embedding ids by chunk hash: identical texts share one stored vector."""
        return self.store.embedding_ids(hashes)

    def write(self, pieces: Sequence[DocumentPiece], vectors: Mapping[str, Any]) -> None:
        """New vectors, then each piece's document row and chunks, in one transaction.

        A chunk whose hash maps to None is written without a vector (`embed_pending` adds it).
        """
        new = [h for h, value in vectors.items() if value is not None and not isinstance(value, int)]
        with self.store.transaction():
            ids: dict[str, int | None] = {
                h: value for h, value in vectors.items() if value is None or isinstance(value, int)
            }
            if new:
                import numpy as np

                ids.update(self.store.insert_embeddings(new, np.stack([vectors[h] for h in new])))
            for piece in pieces:
                self._write_piece(piece, ids)

    def _write_piece(self, piece: DocumentPiece, embedding_ids: Mapping[str, int | None]) -> None:
        store = self.store
        if piece.first:
            doc_id = store.upsert_document(piece.record)
            store.clear_chunks(doc_id, piece.group)
        else:
            doc_id = store.document_by_path(piece.record["path"])["id"]
        store.add_chunks(doc_id, piece.group, piece.chunks, piece.record.get("title"), embedding_ids)
        if piece.last:
            store.mark_chunked(doc_id, piece.group, piece.content_hash)

    def pending_embeddings(self, group: str, limit: int, after: int = 0) -> tuple[dict[str, str], int, int]:
        return self.store.pending_embeddings(group, limit, after)

    def attach_vectors(self, group: str, vectors: Mapping[str, Any], after: int, last: int) -> int:
        """Store the new vectors (by chunk hash; None: one is stored already) and give them to
        the group's chunks without one in the id range (`after`, `last`], in one transaction;
        returns how many chunks got a vector."""
        import numpy as np

        with self.store.transaction():
            stored = self.store.embedding_ids(vectors)
            new = [h for h in vectors if h not in stored and vectors[h] is not None]
            if new:
                self.store.insert_embeddings(new, np.stack([vectors[h] for h in new]))
            return self.store.attach_embeddings(group, after, last)

    def embedding_coverage(self, group: str) -> tuple[int, int]:
        """(chunks with a vector, chunks) of the group, from one committed state: what a
        current vector file recorded when it was written (no count), else counted."""
        from ragcli.store.local.vectors import read_params

        with self.store.snapshot():
            path = self.store.current_vector_file(group)
            params = (read_params(path) or {}) if path is not None else {}
            if "chunks" in params and "embedded_chunks" in params:
                return int(params["embedded_chunks"]), int(params["chunks"])
            return self.store.embedded_count(group), self.store.chunk_count(group)

    def without_vectors(self, chunk_ids: Sequence[int]) -> set[int]:
        return self.store.without_vectors(chunk_ids)

    def delete_documents(self, doc_ids: Iterable[int]) -> int:
        return self.store.delete_documents(doc_ids)

    def documents_under(self, roots: Sequence[Path]) -> dict[str, int]:
        return self.store.documents_under(roots)

    def document_ids(self) -> dict[str, int]:
        return self.store.document_ids()

    def sync_vectors(self, group: str, params: Mapping[str, Any]) -> int:
        return self.store.sync_vectors(group, params)

    def drop_unused_vectors(self) -> None:
        self.store.delete_unused_embeddings()

    # -- reads ------------------------------------------------------------------------
    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]:
        return self.store.chunks(ids)

    def document_chunks(self, doc_id: int, group: str) -> list[tuple[int, int, int, str]]:
        return self.store.document_chunks(doc_id, group)

    def neighbour_chunks(self, doc_id: int, group: str, order: int) -> list[tuple[int, int, int, str]]:
        return self.store.neighbour_chunks(doc_id, group, order)

    def document_groups(self, doc_id: int) -> list[str]:
        return self.store.document_groups(doc_id)

    def list_documents(self) -> list[dict[str, Any]]:
        return self.store.list_documents()

    def has_chunks(self, group: str) -> bool:
        return self.store.has_chunks(group)

    def chunk_count(self, group: str) -> int:
        return self.store.chunk_count(group)

    def filter_keys(self) -> list[str]:
        return self.store.filter_keys()

    def compile_filter(self, filters: Mapping[str, tuple[str, ...]]) -> ChunkFilter:
        """Filters as a WHERE clause over `documents d` (`ragcli.store.filters`)."""
        from ragcli.store.filters import filters_sql

        where, params = filters_sql(filters)
        return ChunkFilter(where, tuple(params))

    def lexical(self, group: str) -> LocalLexical:
        return LocalLexical(self.store, group)

    def dense(self, group: str) -> LocalDense:
        return LocalDense(self.store, group)

    def content_state(self) -> dict[str, Any]:
        return self.store.content_state()

    # -- status and diagnosis ---------------------------------------------------------
    def counts(self) -> dict[str, int]:
        return {name: self.store.count(name) for name in ("documents", "chunks", "embeddings")}

    def describe(self) -> dict[str, Any]:
        """Per-group vector files (count, current, exact or IVF) and sizes on disk."""
        from ragcli.store.local.vectors import read_params

        groups = {}
        for name in self.store.groups():
            params = read_params(self.store.vector_path(name)) or {}
            embedded, chunks = self.embedding_coverage(name)
            groups[name] = {
                "vectors": params.get("count", 0),
                # Current: written after the last change to the group's chunks (else a search
                # rebuilds the vectors from the database, and says what it does not cover).
                "vectors_current": self.store.current_vector_file(name) is not None,
                "vector_search": vector_search(params),
                "embedded_chunks": embedded,
                "embedded_share": embedded_share(embedded, chunks),
            }
        sizes = {
            "database": sum(directory_size(self.path / (DATABASE_NAME + s)) for s in ("", "-wal", "-shm")),
            "vectors": directory_size(self.path / VECTORS_DIR),
        }
        return {"groups": groups, "sizes": sizes}

    def health_checks(self) -> list[tuple[str, Any, str]]:
        from ragcli.store.local.health import local_checks

        return local_checks(self.store)


class LocalLexical:
    """BM25 over one group's postings (kept in memory between queries) and its chunks."""

    def __init__(self, store: Store, group: str) -> None:
        from ragcli.analysis import index_terms
        from ragcli.store.local.postings_reader import PostingsReader

        self.store = store
        self.group = group
        self._reader = PostingsReader()
        self._chunks = ChunkCache()
        self._terms = index_terms  # imported here, not per query (a `from` import costs 1 µs)

    def search_many(
        self, queries: Sequence[str], k: int, allowed: ChunkFilter | None
    ) -> list[list[tuple[Chunk, float]]]:
        """One snapshot, one read of the hit chunks (reused while the database is unchanged)."""
        with self.store.snapshot():  # filters, statistics and postings from the same commit
            allowed_ids = self._allowed_ids(allowed) if allowed is not None and allowed.where else None
            if allowed_ids is not None and not len(allowed_ids):
                return [[] for _ in queries]
            version = self.store.version()  # one read tells both caches the database is unchanged
            # All analysed first, then all scored: each loop keeps its own code and data in the
            # CPU's caches (about 4% of a batch's CPU on SciFact).
            with stage("bm25 score"):
                terms = [self._terms(query) for query in queries]
                ranked = [
                    self._reader.top_k(self.store.db, self.group, query_terms, k, allowed_ids, version)
                    for query_terms in terms
                ]
            held = self._chunks.held(version)
            try:  # every hit read before: no list of ids, no dict of them
                return [[(held[cid], score) for cid, score in rows] for rows in ranked]
            except KeyError:
                pass
            with stage("read chunks", "bm25"):
                chunks = self._chunks.chunks(
                    self.store, [chunk_id for rows in ranked for chunk_id, _ in rows], version
                )
        return [[(chunks[cid], score) for cid, score in rows if cid in chunks] for rows in ranked]

    def term_shares(self, terms: Sequence[str]) -> dict[str, float]:
        """The share of the group's live chunks holding each term (its postings' count), from
        the postings the reader keeps (read on a miss)."""
        with self.store.snapshot():
            chunks, counts = self._reader.live_counts(self.store.db, self.group, terms, self.store.version())
        return {term: count / chunks for term, count in counts.items()} if chunks else {}

    def search_cached(
        self, queries: Sequence[str], k: int, version: Hashable
    ) -> list[list[tuple[Chunk, float]]] | None:
        """`search_many` without a filter from memory alone: no transaction, no read of the
        database. None unless every query's postings and hit chunks were read at `version`
        (`Store.version()`, read just before, outside a transaction): then everything used
        comes from that one committed state, as a snapshot begun now would read it, so a
        concurrent ingest cannot tear the answer. Saves the BEGIN and COMMIT of a warm query."""
        held = self._chunks.held(version)
        if not held:
            return None
        ranked = []
        for query in queries:
            rows = self._reader.top_k_cached(self.group, self._terms(query), k, version)
            if rows is None:
                return None
            ranked.append(rows)
        try:
            return [[(held[cid], score) for cid, score in rows] for rows in ranked]
        except KeyError:
            return None

    def _allowed_ids(self, allowed: ChunkFilter) -> list[int]:
        return self.store.filtered_chunk_ids(self.group, allowed.where, allowed.params)


class LocalDense:
    """One group's FAISS vector file; identical chunk texts share one vector."""

    def __init__(self, store: Store, group: str) -> None:
        self.store = store
        self.group = group
        self._index: VectorIndex | None = None

    def vector_index(self) -> VectorIndex:
        """The group's vector index, loaded once (rebuilt from the database when damaged)."""
        if self._index is None:
            self._index = self.store.vector_index(self.group)
        return self._index

    def open_in_background(self) -> threading.Thread | None:
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

    def vectors(self, chunk_ids: Sequence[int], dimension: int) -> np.ndarray:
        return self.store.chunk_vectors(chunk_ids, dimension)

    def top_k(self, vector: np.ndarray, k: int, allowed: ChunkFilter | None) -> list[tuple[int, float]]:
        """Vector hits mapped to the chunks that use them, filtered by their documents."""
        import numpy as np

        index = self.vector_index()
        allowed_chunks = (
            self.store.filtered_embedding_ids(self.group, allowed.where, allowed.params)
            if allowed is not None and allowed.where
            else None
        )
        if len(index) == 0 or allowed_chunks == {}:
            return []
        allowed_ids = None if allowed_chunks is None else np.fromiter(set(allowed_chunks.values()), np.int64)
        # Over-fetch: vectors whose chunks were deleted by a concurrent ingest map to nothing.
        with stage("vector search"):
            scores, ids = index.search(vector, k + max(10, k // 2), allowed_ids)
        pairs = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
        with stage("vector owners"):
            owners = self.store.chunk_ids_for_embeddings(self.group, [i for i, _ in pairs])
        ranked: list[tuple[int, float]] = []
        for embedding_id, score in pairs:
            ranked.extend(
                (chunk_id, score)
                for chunk_id in owners.get(embedding_id, [])
                if allowed_chunks is None or chunk_id in allowed_chunks
            )
        return ranked[:k]


def embedded_share(embedded: int, chunks: int) -> float:
    """The share of chunks with a vector, 0..1 (1.0 for a group without chunks)."""
    return round(embedded / chunks, 4) if chunks else 1.0


def vector_search(params: dict[str, Any]) -> dict[str, Any]:
    """How a group's vectors are searched, from its params file: exact (flat) or IVF."""
    kind = params.get("index_type", "flat")
    if kind == "flat":
        return {"type": "exact"}
    return {"type": kind, "nlist": params.get("nlist"), "nprobe": params.get("nprobe")}
