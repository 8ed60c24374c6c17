"""The Milvus collections' schema (`ragcli.store.milvus.backend`): creating, checking, and their rows.

BM25 analysis: Milvus's analyzers have no CJK bigrams (a server's `standard` tokenizer
splits CJK into single characters, its `english` analyzer has no accent folding; Milvus
Lite has only `standard`, `\\w+` and lower case, and `jieba`). So the analysed field holds
ragcli's own terms (`ragcli.analysis.term_string`: accents folded, Lucene's English stop
words dropped, Snowball stems, CJK bigrams), which Milvus only splits back on the spaces (a
server's `whitespace` tokenizer; Milvus Lite's `standard`, whose `\\w+` splits those terms
the same way), and queries are analysed the same way before they are sent: the terms are
exactly the local store's. What differs is the scoring (see README
"Scaling out"): Milvus uses Lucene's idf, log(1 + (N - df + 0.5) / (df + 0.5)), and
Milvus Lite computes N, df and the average length per segment.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from ragcli.store.interface import DocumentPiece, hash_key
from ragcli.types import Chunk

CHUNKS = "ragcli_chunks"
DOCUMENTS = "ragcli_documents"
BM25_PARAMS = {"bm25_k1": 1.2, "bm25_b": 0.75}  # the local engine's (rank-bm25's) constants
LITE_ANALYZER = {"tokenizer": "standard"}  # Milvus Lite has no whitespace tokenizer
SERVER_ANALYZER = {"tokenizer": "whitespace"}
CHUNK_FIELDS = ["id", "doc_id", "chunk_group", "ord", "text", "start", "stop", "page", "path", "metadata"]
_PATH = 4096
_TEXT = 65535


def key_of(*parts: str) -> int:
    """A stable positive int64 primary key for the joined parts."""
    raw = "\0".join(parts).encode("utf-8", "surrogateescape")
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big") >> 1


def analyzer_for(uri: str) -> dict[str, str]:
    """The analyzer that splits ragcli's space-separated terms back apart on this deployment."""
    return LITE_ANALYZER if uri.endswith(".db") else SERVER_ANALYZER


def chunk_fields(
    dimension: int, analyzer: Mapping[str, str] = LITE_ANALYZER
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Field name -> (DataType name, extra arguments) of the chunks collection."""
    return {
        "id": ("INT64", {"is_primary": True}),
        "doc_id": ("INT64", {}),
        "path": ("VARCHAR", {"max_length": _PATH}),
        "chunk_group": ("VARCHAR", {"max_length": 64}),
        "ord": ("INT64", {}),
        "start": ("INT64", {}),
        "stop": ("INT64", {}),
        "page": ("INT64", {}),
        "hash": ("VARCHAR", {"max_length": 64}),
        "text": ("VARCHAR", {"max_length": _TEXT}),
        "terms": (
            "VARCHAR",
            {"max_length": _TEXT, "enable_analyzer": True, "analyzer_params": dict(analyzer)},
        ),
        "sparse": ("SPARSE_FLOAT_VECTOR", {}),
        "vector": ("FLOAT_VECTOR", {"dim": dimension}),
        "metadata": ("JSON", {}),
    }


def document_fields() -> dict[str, tuple[str, dict[str, Any]]]:
    """Field name -> (DataType name, extra arguments) of the documents collection."""
    text = {"max_length": _PATH}
    return {
        "doc_id": ("INT64", {"is_primary": True}),
        "path": ("VARCHAR", text),
        "content_hash": ("VARCHAR", {"max_length": 64}),
        "file_name": ("VARCHAR", text),
        "file_type": ("VARCHAR", {"max_length": 32}),
        "size": ("INT64", {}),
        "modified": ("VARCHAR", {"max_length": 64}),
        "created": ("VARCHAR", {"max_length": 64}),
        "title": ("VARCHAR", text),
        "metadata": ("JSON", {}),
        "ingested_at": ("VARCHAR", {"max_length": 64}),
        "chunked": ("JSON", {}),
        "chunk_counts": ("JSON", {}),
        "placeholder": ("FLOAT_VECTOR", {"dim": 2}),
    }


def _schema(client, fields: Mapping[str, tuple[str, dict[str, Any]]]):
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    for name, (kind, extra) in fields.items():
        schema.add_field(name, getattr(DataType, kind), **extra)
    return schema


def create_collections(client, dimension: int, analyzer: Mapping[str, str]) -> None:
    """Create both collections with their indexes (the chunks' BM25 function among them)."""
    from pymilvus import Function, FunctionType

    chunks = _schema(client, chunk_fields(dimension, analyzer))
    chunks.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["terms"],
            output_field_names=["sparse"],
        )
    )
    indexes = client.prepare_index_params()
    indexes.add_index("vector", index_type="FLAT", metric_type="IP")
    indexes.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params=BM25_PARAMS)
    client.create_collection(CHUNKS, schema=chunks, index_params=indexes, consistency_level="Strong")
    placeholder = client.prepare_index_params()
    placeholder.add_index("placeholder", index_type="FLAT", metric_type="L2")
    client.create_collection(
        DOCUMENTS,
        schema=_schema(client, document_fields()),
        index_params=placeholder,
        consistency_level="Strong",
    )


def check_collections(client, dimension: int) -> str:
    """Both collections exist with the fields, types and dimension ragcli writes.

    Raises:
        RuntimeError: names the first difference.
    """
    expected = {CHUNKS: chunk_fields(dimension), DOCUMENTS: document_fields()}
    for name, fields in expected.items():
        if not client.has_collection(name):
            raise RuntimeError(f"collection {name} is missing")
        described = {f["name"]: f for f in client.describe_collection(name)["fields"]}
        for field, (kind, extra) in fields.items():
            if field not in described:
                raise RuntimeError(f"{name}.{field} is missing")
            actual = getattr(described[field]["type"], "name", str(described[field]["type"]))
            if actual != kind:
                raise RuntimeError(f"{name}.{field} is {actual}, not {kind}")
            dim = described[field].get("params", {}).get("dim")
            if "dim" in extra and dimension and int(dim or 0) != extra["dim"]:
                raise RuntimeError(f"{name}.{field} has dimension {dim}, the index's model {extra['dim']}")
    functions = client.describe_collection(CHUNKS).get("functions", [])
    if not any(f.get("output_field_names") == ["sparse"] for f in functions):
        raise RuntimeError(f"{CHUNKS} has no BM25 function filling `sparse`")
    return f"{CHUNKS} and {DOCUMENTS} have ragcli's schema (dimension {dimension})"


def chunk_rows(piece: DocumentPiece, vectors: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chunks collection's rows for a piece (the BM25 function fills `sparse`)."""
    from ragcli.analysis import term_string

    path, group = piece.record["path"], piece.group
    doc_id = key_of(path)
    metadata = _metadata(piece.record)
    return [
        {
            "id": key_of(path, group, str(chunk.order)),
            "doc_id": doc_id,
            "path": path,
            "chunk_group": group,
            "ord": chunk.order,
            "start": chunk.start,
            "stop": chunk.end,
            "page": -1 if chunk.page is None else chunk.page,
            "hash": chunk.hash,
            "text": chunk.text,
            "terms": term_string(chunk.text, piece.record.get("title")),
            "vector": vectors[chunk.hash],
            "metadata": metadata,
        }
        for chunk in piece.chunks
    ]


def _metadata(record: Mapping[str, Any]) -> dict[str, Any]:
    """A chunk's metadata as the local store builds it: free-form metadata plus the columns."""
    meta = json.loads(json.dumps(record.get("metadata") or {}, ensure_ascii=False, default=str))
    columns = ("file_name", "file_type", "size", "modified", "created", "title")
    meta.update({key: record[key] for key in columns if record.get(key) is not None})
    return meta


def document_row(
    piece: DocumentPiece, doc_id: int, count: int, old: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The documents collection's row once all of a document's chunks in a group are in."""
    from ragcli.store.directory import now_iso

    record = piece.record
    chunked = dict((old or {}).get("chunked") or {})
    counts = dict((old or {}).get("chunk_counts") or {})
    chunked[piece.group] = hash_key(piece.content_hash)
    counts[piece.group] = count
    return {
        "doc_id": doc_id,
        "path": record["path"],
        "content_hash": hash_key(piece.content_hash),
        "file_name": record.get("file_name") or "",
        "file_type": record.get("file_type") or "",
        "size": -1 if record.get("size") is None else int(record["size"]),
        "modified": record.get("modified") or "",
        "created": record.get("created") or "",
        "title": record.get("title") or "",
        "metadata": json.loads(json.dumps(record.get("metadata") or {}, ensure_ascii=False, default=str)),
        "ingested_at": now_iso(),
        "chunked": chunked,
        "chunk_counts": counts,
        "placeholder": [0.0, 0.0],
    }


def quoted(value: str) -> str:
    """A string literal for a Milvus expression."""
    return json.dumps(value, ensure_ascii=False)


def chunk_from_row(row: Mapping[str, Any]) -> Chunk:
    """A chunks-collection row as a `Chunk`."""
    return Chunk(
        id=row["id"],
        doc_id=row["doc_id"],
        group=row["chunk_group"],
        order=row["ord"],
        text=row["text"],
        start=row["start"],
        end=row["stop"],
        page=None if row["page"] < 0 else row["page"],
        path=row["path"],
        metadata=dict(row["metadata"] or {}),
    )
