"""The local store's checks for `rag doctor`: SQLite integrity and each group's vector file."""

from __future__ import annotations

import json
import shlex
import sqlite3
from typing import Any

from ragcli.store.directory import integrity
from ragcli.store.local.database import Store


def local_checks(store: Store) -> list[tuple[str, Any, str]]:
    """(name, probe, fix) for the database's integrity, then each group's vector file."""
    checks: list[tuple[str, Any, str]] = [
        (
            "sqlite integrity",
            lambda: integrity(store),
            f"rebuild the index (your documents are untouched): rag ingest --rebuild "
            f"--index {store.path} {roots(store)}",
        )
    ]
    for group in store.groups():
        checks.append(
            (
                f"vectors ({group})",
                lambda g=group: vectors(store, g),
                "run `rag ingest` (it repairs the vector file from the database)",
            )
        )
    return checks


def roots(store: Store) -> str:
    """The index's roots as shell words, for a rebuild command."""
    try:
        return shlex.join(json.loads(store.get_meta("roots", "[]") or "[]")) or "DIR..."
    except (sqlite3.DatabaseError, ValueError):
        return "DIR..."


def vectors(store: Store, group: str) -> str:
    from ragcli.store.local.vectors import checksum_problem, read_params

    path = store.vector_path(group)
    params = read_params(path)
    wanted = len(store.group_embedding_ids(group))
    chunks = store.chunk_count(group)
    if params is None or not path.is_file():
        raise RuntimeError("no vector file yet (an ingest was interrupted before writing it)")
    if params.get("generation") != store.vector_generation(group):
        raise RuntimeError(
            f"vector file is stale: it was written by ingest run {params.get('generation')}, "
            f"the database is at run {store.vector_generation(group)} "
            "(an ingest was interrupted between the two writes)"
        )
    problem = checksum_problem(path, params)
    if problem:
        raise RuntimeError(f"vector file is damaged: {problem}")
    if store.current_vector_file(group) is None:
        raise RuntimeError(
            "vector file is behind the chunks: an ingest or `rag embed` is running or was interrupted "
            "(searches rebuild the vectors from the database meanwhile)"
        )
    if params.get("count") != wanted:
        raise RuntimeError(f"{params.get('count')} vectors for {wanted} distinct chunk texts")
    waiting = chunks - store.embedded_count(group)
    pending = f"; {waiting} chunks wait for a vector (BM25 finds them): run `rag embed`" if waiting else ""
    return (
        f"{wanted} vectors for {chunks} chunks ({chunks - waiting - wanted} share an identical text){pending}"
    )
