"""The Milvus backend: documents, chunks, BM25 terms and vectors in a Milvus deployment.

The same pymilvus client talks to a Milvus Lite file (``*.db``, embedded, one process at a
time) and to a Milvus server (``http://host:19530``). Two collections hold the content:

- ``ragcli_chunks``: one row per chunk, keyed by a hash of (path, group, order), so the
  same file ingested from two machines overwrites itself instead of duplicating. It holds
  the text, ragcli's own BM25 terms (`ragcli.analysis`, space-separated) in a VARCHAR whose
  analyzer only splits on the spaces, the sparse field Milvus's BM25 function fills from
  them, the unit-length vector (FLAT index, inner product) and the document's metadata;
- ``ragcli_documents``: one row per file, keyed by a hash of its path: content hash, size,
  dates, metadata and, per group, the content hash its chunks were made from (what makes
  re-ingest incremental). It is written after the chunks, so an interrupted document is
  re-chunked by the next ingest. Milvus needs a vector field in every collection: this one
  has a 2-dimension placeholder.

The embedding model is recorded in the chunks collection's properties; an index directory
with another model is refused. Per-machine settings (groups, roots, exclusions) stay in the
index directory's SQLite database (`ragcli.store.directory`). Filters are evaluated with the
local store's SQL over the document rows (`ragcli.store.filters`), then applied as
``doc_id in [...]``.

The client is made by `ragcli.store.milvus.connection`; status and doctor checks are in
`ragcli.store.milvus.health`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ragcli.errors import IndexMismatch, StoreUnavailable
from ragcli.store.interface import STORE_URI_KEY, ChunkFilter, DocumentPiece
from ragcli.store.filters import COLUMNS
from ragcli.store.directory import DirectorySettings, IndexDirectory
from ragcli.store.milvus.connection import check_lite_present, connect, reason
from ragcli.store.milvus.health import MilvusHealth
from ragcli.store.milvus.search import MilvusDense, MilvusLexical
from ragcli.store.milvus.schema import (
    CHUNK_FIELDS,
    analyzer_for,
    chunk_from_row,
    quoted,
    CHUNKS,
    DOCUMENTS,
    chunk_rows,
    create_collections,
    document_row,
    key_of,
)
from ragcli.types import Chunk
from ragcli.text import PART_SEPARATOR

_BATCH = 500
_DOC_FIELDS = [
    "doc_id", "path", "content_hash", "file_name", "file_type", "size", "modified", "created", "title",
    "metadata", "ingested_at", "chunked", "chunk_counts",
]  # fmt: skip
_MODEL_KEYS = ("embedding_model", "embedding_fingerprint", "embedding_dimension")
_UNFINISHED = "milvus_unfinished"  # local meta: paths with chunks written but no document row yet
_NONE = ""  # optional strings are stored empty (Milvus Lite has no nullable fields)


class MilvusBackend(DirectorySettings, MilvusHealth):
    """An index whose documents, chunks and vectors live in Milvus (see the module docstring)."""

    kind = "milvus"
    # Every chunk row carries its vector: chunks are embedded before they are written.
    defers_embedding = False

    def __init__(self, store: IndexDirectory, uri: str) -> None:
        self.store = store
        self.path = store.path
        self.uri = uri
        if store.get_meta(STORE_URI_KEY) == uri:
            check_lite_present(uri)
        self.client = connect(uri)
        self._shared: dict[str, str] = {}
        self._looked_up: dict[str, Any] | None = None
        try:
            if self.client.has_collection(CHUNKS):
                self._load()
        except Exception as error:  # noqa: BLE001
            self.client.close()
            raise StoreUnavailable(f"cannot use the Milvus store {uri}: {reason(error)}") from error

    def _load(self) -> None:
        for name in (CHUNKS, DOCUMENTS):
            self.client.load_collection(name)
        properties = self.client.describe_collection(CHUNKS).get("properties", {})
        self._shared = {
            key: properties[f"ragcli.{key}"] for key in _MODEL_KEYS if f"ragcli.{key}" in properties
        }

    def _ready(self) -> bool:
        return bool(self._shared) or self.client.has_collection(CHUNKS)

    # -- the index directory (per machine) --------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        value = self.store.get_meta(key)
        return value if value is not None else self._shared.get(key, default)

    def forget_chunked(self, group: str) -> None:
        """New chunk settings: every document's chunks of the group are made again."""
        for row in self._scan(DOCUMENTS, ["doc_id", "chunked"]):
            if group in (row["chunked"] or {}):
                self._update_document(row["doc_id"], lambda doc: doc["chunked"].pop(group, None))

    def transaction(self):
        return self.store.transaction()

    def check_integrity(self) -> None:
        self.store.check_integrity()

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self.store.close()

    # -- ingest -----------------------------------------------------------------------
    def bind_model(self, model_id: str, fingerprint: str, dimension: int) -> None:
        """Create the collections for this model, or check that they were made for it.

        Raises:
            IndexMismatch: the Milvus store holds vectors of another model.
        """
        if not self.client.has_collection(CHUNKS):
            create_collections(self.client, dimension, analyzer_for(self.uri))
            self.client.alter_collection_properties(
                CHUNKS,
                properties={
                    "ragcli.embedding_model": model_id,
                    "ragcli.embedding_fingerprint": fingerprint,
                    "ragcli.embedding_dimension": str(dimension),
                },
            )
            self._load()
            return
        if not self._shared:
            self._load()
        stored = self._shared.get("embedding_fingerprint")
        if stored and stored != fingerprint:
            raise IndexMismatch(
                f"the Milvus store {self.uri} holds vectors of {self._shared.get('embedding_model')} "
                f"(dimension {self._shared.get('embedding_dimension')}), not {model_id}: ingest with "
                f"--embed-model {self._shared.get('embedding_model')}, or use another --store"
            )

    def document_by_path(self, path: str) -> dict[str, Any] | None:
        if not self._ready():
            return None
        rows = self.client.query(DOCUMENTS, ids=[key_of(path)], output_fields=_DOC_FIELDS)
        document = _document(rows[0]) if rows else None
        self._looked_up = document  # ingest asks `chunked_hash` next: no second round trip
        return document

    def chunked_hash(self, doc_id: int, group: str) -> str | None:
        document, self._looked_up = self._looked_up, None
        if document is None or document["id"] != doc_id:
            rows = self.client.query(DOCUMENTS, ids=[doc_id], output_fields=["chunked"])
            document = rows[0] if rows else {}
        return (document.get("chunked") or {}).get(group)

    def known_vectors(self, hashes: Iterable[str]) -> dict[str, Any]:
        """Vectors of chunks with the same text already in the store (not embedded again)."""
        import numpy as np

        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), _BATCH):
            part = unique[start : start + _BATCH]
            expr = f"hash in {json.dumps(part)}"
            for row in self.client.query(CHUNKS, filter=expr, output_fields=["hash", "vector"]):
                found[row["hash"]] = np.asarray(row["vector"], dtype=np.float32)
        return found

    def write(self, pieces: Sequence[DocumentPiece], vectors: Mapping[str, Any]) -> None:
        """Upsert the chunks, then per finished document drop its surplus old chunks and
        upsert its row (the mark that it is complete)."""
        rows = [row for piece in pieces for row in chunk_rows(piece, vectors)]
        # Marked before the chunks land, cleared once the document's row is written: chunks a
        # kill leaves behind are then known and swept (`drop_unused_vectors`), never ghosts.
        self._mark_unfinished(add={piece.record["path"] for piece in pieces})
        for start in range(0, len(rows), _BATCH):
            self.client.upsert(CHUNKS, rows[start : start + _BATCH])
        finished = {key_of(piece.record["path"]): piece for piece in pieces if piece.last}
        if not finished:
            return
        counts = {
            doc_id: piece.chunks[-1].order + 1 if piece.chunks else 0 for doc_id, piece in finished.items()
        }
        surplus = " or ".join(
            f"(doc_id == {doc_id} and chunk_group == {quoted(finished[doc_id].group)} and ord >= {count})"
            for doc_id, count in counts.items()
        )
        self.client.delete(CHUNKS, filter=surplus)
        old = self.client.query(
            DOCUMENTS, ids=list(finished), output_fields=["doc_id", "chunked", "chunk_counts"]
        )
        known = {row["doc_id"]: row for row in old}
        self.client.upsert(
            DOCUMENTS,
            [
                document_row(piece, doc_id, counts[doc_id], known.get(doc_id))
                for doc_id, piece in finished.items()
            ],
        )
        self._mark_unfinished(remove={piece.record["path"] for piece in finished.values()})

    def _unfinished(self) -> set[str]:
        """Paths whose chunks were written but whose document row was not (yet)."""
        return set(json.loads(self.store.get_meta(_UNFINISHED, "[]") or "[]"))

    def _mark_unfinished(self, add: Iterable[str] = (), remove: Iterable[str] = ()) -> None:
        """Committed at once (autocommit) unless inside the caller's transaction."""
        before = self._unfinished()
        after = (before | set(add)) - set(remove)
        if after != before:
            self.store.set_meta(_UNFINISHED, json.dumps(sorted(after)))

    def delete_documents(self, doc_ids: Iterable[int]) -> int:
        ids = [int(i) for i in doc_ids]
        self._mark_unfinished(remove={path for path in self._unfinished() if key_of(path) in set(ids)})
        count = 0
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            count += len(self.client.query(DOCUMENTS, ids=part, output_fields=["doc_id"]))
            self.client.delete(CHUNKS, filter=f"doc_id in {part}")
            self.client.delete(DOCUMENTS, ids=part)
        return count

    def documents_under(self, roots: Sequence[Path]) -> dict[str, int]:
        """Documents under `roots`, and the half-written ones an interrupted ingest left there
        (so pruning and `rag rm` remove their chunks too)."""
        prefixes = [str(root).rstrip("/") for root in roots]
        known = {path: key_of(path) for path in self._unfinished()} | self.document_ids()
        return {
            path: doc_id
            for path, doc_id in known.items()
            if any(path == p or path.startswith((p + "/", p + PART_SEPARATOR)) for p in prefixes)
        }

    def document_ids(self) -> dict[str, int]:
        return {row["path"]: row["doc_id"] for row in self._scan(DOCUMENTS, ["doc_id", "path"])}

    def sync_vectors(self, group: str, params: Mapping[str, Any]) -> int:
        """Milvus indexes as it goes: nothing to sync; the group's vector count."""
        return self.chunk_count(group)

    def drop_unused_vectors(self) -> None:
        """Vectors live in their chunks' rows; what is swept at the end of every run are the
        chunks of documents an interrupted ingest began and no later run finished."""
        unfinished = self._unfinished()
        if not unfinished:
            return
        complete = {
            row["doc_id"] for row in self.client.query(DOCUMENTS, ids=[key_of(p) for p in unfinished])
        }
        ghosts = [key_of(path) for path in unfinished if key_of(path) not in complete]
        if ghosts:
            self.client.delete(CHUNKS, filter=f"doc_id in {ghosts}")
        self._mark_unfinished(remove=unfinished)

    def pending_embeddings(self, group: str, limit: int, after: int = 0) -> tuple[dict[str, str], int, int]:
        """None: a chunk row is written with its vector."""
        return {}, 0, after

    def attach_vectors(self, group: str, vectors: Mapping[str, Any], after: int, last: int) -> int:
        """Nothing waits for a vector here (`pending_embeddings` is always empty)."""
        return 0

    def without_vectors(self, chunk_ids: Sequence[int]) -> set[int]:
        """None: every chunk row has its vector."""
        return set()

    def embedding_coverage(self, group: str) -> tuple[int, int]:
        """Every chunk row has its vector."""
        count = self.chunk_count(group)
        return count, count

    # -- reads ------------------------------------------------------------------------
    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]:
        found: dict[int, Chunk] = {}
        if not self._ready():
            return found
        for start in range(0, len(ids), _BATCH):
            part = [int(i) for i in ids[start : start + _BATCH]]
            for row in self.client.query(CHUNKS, ids=part, output_fields=CHUNK_FIELDS):
                found[row["id"]] = chunk_from_row(row)
        return found

    def document_chunks(self, doc_id: int, group: str) -> list[tuple[int, int, int, str]]:
        return self._chunk_rows(f"doc_id == {int(doc_id)} and chunk_group == {quoted(group)}")

    def neighbour_chunks(self, doc_id: int, group: str, order: int) -> list[tuple[int, int, int, str]]:
        around = f"ord in [{int(order) - 1}, {int(order) + 1}]"
        return self._chunk_rows(f"doc_id == {int(doc_id)} and chunk_group == {quoted(group)} and {around}")

    def _chunk_rows(self, where: str) -> list[tuple[int, int, int, str]]:
        """(id, start, end, text) of the chunks matching a filter expression, in reading order."""
        rows = self.client.query(CHUNKS, filter=where, output_fields=["id", "start", "stop", "text", "ord"])
        rows.sort(key=lambda r: (r["start"], r["ord"]))
        return [(r["id"], r["start"], r["stop"], r["text"]) for r in rows]

    def document_groups(self, doc_id: int) -> list[str]:
        rows = self.client.query(DOCUMENTS, ids=[int(doc_id)], output_fields=["chunk_counts"])
        return sorted((rows[0]["chunk_counts"] or {}) if rows else {})

    def list_documents(self) -> list[dict[str, Any]]:
        documents = [_document(row) for row in self._scan(DOCUMENTS, _DOC_FIELDS)]
        for document in documents:
            document["chunks"] = dict(sorted(document.pop("chunk_counts").items()))
        return sorted(documents, key=lambda d: d["path"])

    def has_chunks(self, group: str) -> bool:
        if not self._ready():
            return False
        return bool(
            self.client.query(CHUNKS, filter=f"chunk_group == {quoted(group)}", output_fields=["id"], limit=1)
        )

    def chunk_count(self, group: str) -> int:
        return self._count(CHUNKS, f"chunk_group == {quoted(group)}")

    def _count(self, collection: str, expr: str = "") -> int:
        if not self._ready():
            return 0
        rows = self.client.query(collection, filter=expr, output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def filter_keys(self) -> list[str]:
        keys = {key for row in self._scan(DOCUMENTS, ["metadata"]) for key in (row["metadata"] or {})}
        return sorted(set(COLUMNS) | keys)

    def compile_filter(self, filters: Mapping[str, tuple[str, ...]]) -> ChunkFilter:
        """The documents passing the filters (the local store's SQL, run over the document
        rows in memory) as a ``doc_id in [...]`` expression."""
        from ragcli.store.filters import filters_sql

        where, params = filters_sql(filters)
        if not where:
            return ChunkFilter("")
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute(
                "CREATE TABLE documents (id INTEGER, path TEXT, file_name TEXT, file_type TEXT, title TEXT, "
                "modified TEXT, created TEXT, metadata TEXT)"
            )
            conn.executemany(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (_filter_row(_document(row)) for row in self._scan(DOCUMENTS, _DOC_FIELDS)),
            )  # fmt: skip
            ids = [row[0] for row in conn.execute(f"SELECT id FROM documents d WHERE {where}", params)]
        finally:
            conn.close()
        return ChunkFilter(f"doc_id in {ids}")

    def lexical(self, group: str) -> MilvusLexical:
        return MilvusLexical(self.client, group)

    def dense(self, group: str) -> MilvusDense:
        return MilvusDense(self.client, group)

    def content_state(self) -> dict[str, Any]:
        """What the answer cache keys on: local meta, counts and the latest document write."""
        latest = max((row["ingested_at"] for row in self._scan(DOCUMENTS, ["ingested_at"])), default=None)
        return {
            "meta": [list(row) for row in self.change_meta()],
            "documents": [self._count(DOCUMENTS), latest],
            "chunks": [self._count(CHUNKS)],
        }

    # -- helpers ----------------------------------------------------------------------
    def _scan(self, collection: str, fields: list[str]) -> Iterable[dict[str, Any]]:
        """Every row of a collection, in batches (a query without a limit is capped by Milvus)."""
        if not self._ready():
            return
        iterator = self.client.query_iterator(collection, batch_size=1000, filter="", output_fields=fields)
        try:
            while batch := iterator.next():
                yield from batch
        finally:
            iterator.close()

    def _update_document(self, doc_id: int, change) -> None:
        rows = self.client.query(DOCUMENTS, ids=[doc_id], output_fields=[*_DOC_FIELDS, "placeholder"])
        if rows:
            row = dict(rows[0])
            row["chunked"] = dict(row["chunked"] or {})
            change(row)
            self.client.upsert(DOCUMENTS, [row])


def _document(row: Mapping[str, Any]) -> dict[str, Any]:
    """A document row as the local store returns one (`id`, None for missing values)."""
    document = {key: (None if row.get(key) == _NONE else row.get(key)) for key in _DOC_FIELDS}
    document["id"] = row["doc_id"]
    document["size"] = None if row.get("size", -1) < 0 else row["size"]
    document["metadata"] = dict(row.get("metadata") or {})
    document["chunk_counts"] = dict(row.get("chunk_counts") or {})
    return document


def _filter_row(d: Mapping[str, Any]) -> tuple:
    columns = ("id", "path", "file_name", "file_type", "title", "modified", "created")
    return (*(d[c] for c in columns), json.dumps(d["metadata"], ensure_ascii=False))
