"""What an index holds: `rag status` and `rag ls` as library calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragcli.store import DATABASE_NAME, Store
from ragcli.store.vectors import read_params


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def vector_search(params: dict[str, Any]) -> dict[str, Any]:
    """How a group's vectors are searched, from its params file: exact (flat) or IVF."""
    kind = params.get("index_type", "flat")
    if kind == "flat":
        return {"type": "exact"}
    return {"type": kind, "nlist": params.get("nlist"), "nprobe": params.get("nprobe")}


def index_status(index: Path) -> dict[str, Any]:
    """Counts, groups, model, sizes and the last ingest of an index.

    Raises:
        NotIndexed: there is no index at `index`.
    """
    from ragcli.store.errors import storage_errors

    store = Store.open(index)
    try:
        with storage_errors(index):
            return _status(store, index)
    finally:
        store.close()


def _status(store: Store, index: Path) -> dict[str, Any]:
    store.check_integrity()  # `rag status` is where a user looks first: say if a page is damaged
    groups = {}
    for name, settings in store.groups().items():
        params = read_params(store.vector_path(name)) or {}
        groups[name] = {
            "split_by": settings.split_by,
            "chunk_size": settings.chunk_size,
            "chunk_overlap": settings.chunk_overlap,
            "chunks": store.count("chunks", "group_name = ?", [name]),
            "vectors": params.get("count", 0),
            "vectors_current": params.get("generation") == store.vector_generation(name),
            "vector_search": vector_search(params),
        }
    return {
        "index": str(index),
        "documents": store.count("documents"),
        "chunks": store.count("chunks"),
        "embeddings": store.count("embeddings"),
        "groups": groups,
        "model": store.get_meta("embedding_model"),
        "dimension": int(store.get_meta("embedding_dimension") or 0) or None,
        "fingerprint": store.get_meta("embedding_fingerprint"),
        "sizes": {
            "database": sum(_size(index / (DATABASE_NAME + s)) for s in ("", "-wal", "-shm")),
            "vectors": _size(index / "vectors"),
        },
        "roots": json.loads(store.get_meta("roots", "[]") or "[]"),
        "last_ingest": json.loads(store.get_meta("last_ingest", "null") or "null"),
    }


def list_documents(index: Path) -> list[dict[str, Any]]:
    """Every indexed document with its type, size, dates and chunk counts per group."""
    store = Store.open(index)
    try:
        return [
            {
                "path": d["path"],
                "file_type": d["file_type"],
                "size": d["size"],
                "modified": d["modified"],
                "title": d["title"],
                "chunks": d["chunks"],
                "ingested_at": d["ingested_at"],
            }
            for d in store.list_documents()
        ]
    finally:
        store.close()


def group_names(index: Path) -> list[str]:
    """The index's chunk groups, read without migrating or locking (for shell completion)."""
    return _read_only_column(index, "SELECT name FROM groups")


def document_paths(index: Path) -> list[str]:
    """Every indexed document path, sorted, read without migrating or locking (for shell completion)."""
    return _read_only_column(index, "SELECT path FROM documents ORDER BY path")


def _read_only_column(index: Path, sql: str) -> list[str]:
    import sqlite3

    with sqlite3.connect(f"file:{index / DATABASE_NAME}?mode=ro", uri=True) as conn:
        return [row[0] for row in conn.execute(sql)]
