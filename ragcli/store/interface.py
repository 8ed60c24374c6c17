"""The store interface every backend implements, and the choice of backend for an index.

An index is always a local directory (its marker, a SQLite database for per-machine
settings: meta, groups, roots, `rag rm` exclusions). Where the documents, chunks, BM25
terms and vectors live is the backend's business:

- ``local`` (the default): the same SQLite database, BM25 postings and FAISS files
  (`ragcli.store.local.backend`);
- ``milvus``: a Milvus deployment or a Milvus Lite file (`ragcli.store.milvus.backend`, imported only
  for an index that uses it), shared by every index directory that names the same URI.

The choice is made when the index is created (`rag ingest DIR --store URI`) and recorded in
its meta (`store_uri`), so later commands need no flag. Credentials never are: they come
from the environment (`MILVUS_TOKEN`, or `MILVUS_USER` and `MILVUS_PASSWORD`).
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Hashable, Iterable, Mapping, Protocol, Sequence

from ragcli.errors import IndexClosed, UsageError

if TYPE_CHECKING:
    import threading

    import numpy as np

    from ragcli.types import Chunk, ChunkSettings

STORE_URI_KEY = "store_uri"
MILVUS_SCHEMES = ("http://", "https://", "tcp://", "grpc://")


@dataclass(frozen=True)
class ChunkFilter:
    """Metadata filters compiled by a backend (`Backend.compile_filter`): `where` is what the
    backend evaluates (SQL over `documents d` for the local store, an expression for Milvus);
    an empty `where` filters nothing."""

    where: str
    params: tuple[Any, ...] = ()


@dataclass(frozen=True)
class PieceChunk:
    """One chunk of a document piece about to be written: what the splitter cut, as every
    backend receives it (each derives its BM25 terms and vector from it)."""

    order: int
    text: str
    start: int
    end: int
    page: int | None
    hash: str


@dataclass
class DocumentPiece:
    """Consecutive chunks of one document in one group. The first piece of a document replaces
    its old chunks, the last one marks it complete for `content_hash` (so an interrupted
    document is re-chunked by the next ingest)."""

    record: dict
    group: str
    content_hash: str
    chunks: list[PieceChunk] = field(default_factory=list)
    first: bool = True
    last: bool = True


def hash_key(content_hash: str) -> str:
    """A content hash as a store may keep it: at most 64 characters (Milvus's field), so a hash
    that names its reader's version is hashed once more; compare hashes through this."""
    if len(content_hash) <= 64:
        return content_hash
    return hashlib.sha256(content_hash.encode("utf-8")).hexdigest()


class LexicalSearch(Protocol):
    """BM25 over one group's chunks."""

    def search_many(
        self, queries: Sequence[str], k: int, allowed: ChunkFilter | None
    ) -> list[list[tuple[Chunk, float]]]:
        """Per query, up to `k` (chunk, score) pairs, best first."""
        ...

    def search_cached(
        self, queries: Sequence[str], k: int, version: Hashable
    ) -> list[list[tuple[Chunk, float]]] | None:
        """`search_many` without a filter from what is kept in memory, read at `version`
        (`Backend.version()`); None when the database must be read."""
        ...

    def term_shares(self, terms: Sequence[str]) -> dict[str, float]:
        """The share of the group's chunks holding each analysed term (terms it cannot tell
        are left out: no share is known)."""
        ...


class DenseSearch(Protocol):
    """Nearest neighbours over one group's unit-length vectors (inner product = cosine)."""

    def open_in_background(self) -> threading.Thread | None:
        """Start loading the vectors while the caller embeds the query (join it before searching)."""
        ...

    def top_k(self, vector: np.ndarray, k: int, allowed: ChunkFilter | None) -> list[tuple[int, float]]:
        """The best `k` (chunk id, cosine) pairs."""
        ...

    def vectors(self, chunk_ids: Sequence[int], dimension: int) -> np.ndarray:
        """The stored vectors of these chunks (those that have one), one per row."""
        ...


class Backend(Protocol):
    """What ingest, retrieval, `rag get/status/ls/rm/doctor` and the answer cache need of a store.

    Meta and groups are the index directory's own (per machine); documents, chunks and
    vectors are the backend's. Writes of documents happen inside `transaction()`.
    """

    path: Path
    kind: str  # "local" or "milvus"
    uri: str | None
    defers_embedding: bool  # chunks may be written before their vectors (`write` with None)

    # -- the index directory: meta, groups --------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...
    def set_meta(self, key: str, value: Any) -> None: ...
    def change_meta(self) -> list[tuple[str, str]]: ...
    def groups(self) -> dict[str, ChunkSettings]: ...
    def group(self, name: str) -> ChunkSettings: ...
    def ensure_group(self, name: str, settings: ChunkSettings) -> bool: ...
    def forget_chunked(self, group: str) -> None: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def snapshot(self) -> AbstractContextManager[None]:
        """Reads in the block see one committed state (local store; elsewhere a no-op)."""
        ...

    def check_integrity(self) -> None: ...
    def close(self) -> None: ...
    def version(self) -> Hashable | None:
        """A value that changes whenever the index may have (None: unknown), so a searcher
        can keep what it read about groups between queries."""
        ...

    # -- ingest bookkeeping -----------------------------------------------------------
    def bind_model(self, model_id: str, fingerprint: str, dimension: int) -> None:
        """Prepare the store for vectors of this model (Milvus: create or check its collections)."""
        ...

    def document_by_path(self, path: str) -> dict[str, Any] | None: ...
    def chunked_hash(self, doc_id: int, group: str) -> str | None: ...
    def known_vectors(self, hashes: Iterable[str]) -> dict[str, Any]:
        """Already stored vectors (or references to them) by chunk text hash: not embedded again."""
        ...

    def write(self, pieces: Sequence[DocumentPiece], vectors: Mapping[str, Any]) -> None:
        """Write document pieces with their chunks; `vectors` maps every chunk hash to what
        `known_vectors` returned or a new vector, or (where `defers_embedding`) to None: the
        chunk is written without one, searchable by BM25 until `attach_vectors`."""
        ...

    def pending_embeddings(self, group: str, limit: int, after: int = 0) -> tuple[dict[str, str], int, int]:
        """The group's next (up to `limit`) chunks without a vector past chunk id `after`:
        (distinct texts by chunk hash, how many chunks, the last chunk id)."""
        ...

    def attach_vectors(self, group: str, vectors: Mapping[str, Any], after: int, last: int) -> int:
        """Give the group's chunks without a vector in the id range (`after`, `last`] (one
        `pending_embeddings` batch) theirs, by chunk hash, in one transaction; returns how
        many chunks got one."""
        ...

    def embedding_coverage(self, group: str) -> tuple[int, int]:
        """(chunks with a vector, chunks) of the group."""
        ...

    def without_vectors(self, chunk_ids: Sequence[int]) -> set[int]:
        """Which of these chunks have no vector yet (dense search cannot find them)."""
        ...

    def delete_documents(self, doc_ids: Iterable[int]) -> int: ...
    def documents_under(self, roots: Sequence[Path]) -> dict[str, int]: ...
    def document_ids(self) -> dict[str, int]: ...
    def sync_vectors(self, group: str, params: Mapping[str, Any]) -> int:
        """After writes: bring the group's vector search in line; returns its vector count."""
        ...

    def drop_unused_vectors(self) -> None: ...

    # -- reads ------------------------------------------------------------------------
    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]: ...
    def document_chunks(self, doc_id: int, group: str) -> list[tuple[int, int, int, str]]: ...
    def neighbour_chunks(self, doc_id: int, group: str, order: int) -> list[tuple[int, int, int, str]]:
        """(id, start, end, text) of the chunks just before and after the one at `order` in its
        document's group (none where there is none), in reading order."""
        ...

    def document_groups(self, doc_id: int) -> list[str]: ...
    def list_documents(self) -> list[dict[str, Any]]: ...
    def has_chunks(self, group: str) -> bool: ...
    def chunk_count(self, group: str) -> int: ...
    def filter_keys(self) -> list[str]: ...
    def compile_filter(self, filters: Mapping[str, tuple[str, ...]]) -> ChunkFilter: ...
    def lexical(self, group: str) -> LexicalSearch: ...
    def dense(self, group: str) -> DenseSearch: ...
    def content_state(self) -> dict[str, Any]: ...

    # -- status and diagnosis ---------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """documents, chunks and embeddings (distinct vectors)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Per-group vector details, sizes on disk and the store (`rag status`)."""
        ...

    def health_checks(self) -> list[tuple[str, Any, str]]:
        """(name, probe, fix) per check `rag doctor` runs; a probe returns a detail or raises."""
        ...


def is_milvus_uri(uri: str) -> bool:
    """A Milvus server URL, or a Milvus Lite file (a path ending in .db)."""
    return uri.startswith(MILVUS_SCHEMES) or uri.endswith(".db")


def normalise_uri(uri: str) -> str:
    """A URI as recorded: "local", a server URL, or a Milvus Lite file's absolute path.

    Raises:
        UsageError: neither a server URL nor a path ending in .db.
    """
    uri = uri.strip()
    if uri in ("", "local"):
        return "local"
    if uri.startswith(MILVUS_SCHEMES):
        return uri.rstrip("/")
    if uri.endswith(".db"):
        return str(Path(uri).expanduser().resolve())
    raise UsageError(
        f"--store {uri}: give a Milvus server URL (http://host:19530) or a Milvus Lite file ending in .db"
    )


class ClosedBackend:
    """What a closed `Searcher` holds instead of its backend: any use raises `IndexClosed`
    naming the index, not the database driver's "closed database" error."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def close(self) -> None:
        """Closing again does nothing."""

    def __getattr__(self, name: str) -> Any:
        raise IndexClosed(
            f"the index at {self.path} was closed (Index.close() closes the searchers it gave): "
            "get an open one with index.searcher(), or call the Index's own methods, which reopen it"
        )
