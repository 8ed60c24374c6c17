"""What an index holds: `rag status` and `rag ls` as library calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragcli.store.directory import DATABASE_NAME
from ragcli.store.interface import Backend
from ragcli.store.chooser import open_backend


EMBED_LOG = "embed.log"  # `rag embed --background`'s output, in the index folder
EMBED_PID = "embed.pid"  # its process id, removed when it finishes


def index_status(index: Path) -> dict[str, Any]:
    """Counts, groups, model, sizes, the store and the last ingest of an index.

    Raises:
        NotIndexed: there is no index at `index`.
        StoreUnavailable: its Milvus store cannot be reached.
    """
    from ragcli.store.errors import storage_errors

    backend = open_backend(index)
    try:
        with storage_errors(index):
            return _status(backend, index)
    finally:
        backend.close()


def _status(backend: Backend, index: Path) -> dict[str, Any]:
    backend.check_integrity()  # `rag status` is where a user looks first: say if a page is damaged
    described = backend.describe()
    groups = {}
    for name, settings in backend.groups().items():
        groups[name] = {
            "split_by": settings.split_by,
            "chunk_size": settings.chunk_size,
            "chunk_overlap": settings.chunk_overlap,
            "chunks": backend.chunk_count(name),
            **described["groups"].get(name, {}),
        }
    embedded = sum(g.get("embedded_chunks", g["chunks"]) for g in groups.values())
    chunks = sum(g["chunks"] for g in groups.values())
    return {
        "index": str(index),
        **backend.counts(),
        "groups": groups,
        "embedding": {
            "embedded_chunks": embedded,
            "chunks": chunks,
            "share": round(embedded / chunks, 4) if chunks else 1.0,
            "background": _unfinished_job(index, embedded, chunks),
        },
        "model": backend.get_meta("embedding_model"),
        "dimension": int(backend.get_meta("embedding_dimension") or 0) or None,
        "fingerprint": backend.get_meta("embedding_fingerprint"),
        "sizes": described["sizes"],
        "store": {"backend": backend.kind, "uri": backend.uri},
        "types": _documents_by_type(backend),
        "roots": json.loads(backend.get_meta("roots", "[]") or "[]"),
        # each root's group and include/exclude patterns (written by ragcli.ingest.remembered)
        "root_options": json.loads(backend.get_meta("root_options", "{}") or "{}"),
        "last_ingest": json.loads(backend.get_meta("last_ingest", "null") or "null"),
    }


def _unfinished_job(index: Path, embedded: int, chunks: int) -> dict[str, Any] | None:
    """`embedding_job`, except a stopped job (killed) whose work another `rag embed` or ingest
    has since finished: nothing it left is still to do, so there is no job to speak of."""
    job = embedding_job(index)
    if job is not None and not job["running"] and embedded >= chunks:
        return None
    return job


def embedding_job(index: Path) -> dict[str, Any] | None:
    """The `rag embed --background` job of the index: pid, whether it still runs, its log;
    None when none was started (or the last one finished).

    `embed.pid` holds the pid and, where Linux's /proc tells it, the process's start time: a
    job killed with -9 leaves the file behind, and a later process given the same pid is not
    taken for the job.
    """
    import os

    try:
        pid, started = read_job_file(index / EMBED_PID)
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
        running = _still_the_job(pid, started, zombie_check=True)
    except ProcessLookupError:
        running = False
    except PermissionError:  # alive, another user's
        running = _still_the_job(pid, started, zombie_check=False)
    return {"pid": pid, "running": running, "log": str(index / EMBED_LOG)}


def _still_the_job(pid: int, started: str | None, *, zombie_check: bool) -> bool:
    """Whether the live process `pid` is still the job: not a finished child waiting to be
    reaped, and started when the job did (where /proc tells both; one read of its stat)."""
    fields = _stat_fields(pid)
    if not fields:
        return True
    if zombie_check and fields[0] == "Z":
        return False
    return started is None or len(fields) <= 19 or fields[19] == started


def read_job_file(path: Path) -> tuple[int, str | None]:
    """(pid, start time or None) from an `embed.pid` file ("PID" or "PID START").

    Raises:
        OSError, ValueError: no file, or not a pid.
    """
    fields = path.read_text(encoding="utf-8").split()
    if not fields:
        raise ValueError(f"{path} is empty")
    return int(fields[0]), fields[1] if len(fields) > 1 else None


def process_start(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (Linux /proc); None where unknown."""
    fields = _stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else None


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first); None where there is
    no /proc or no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()
    except OSError:
        return None


def list_documents(index: Path) -> list[dict[str, Any]]:
    """Every indexed document with its type, size, dates and chunk counts per group."""
    backend = open_backend(index)
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
            for d in backend.list_documents()
        ]
    finally:
        backend.close()


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


def _documents_by_type(backend: Backend) -> dict[str, int]:
    """How many documents of each file type (pdf, pptx, eml ...) the index holds."""
    from collections import Counter

    counts = Counter(document["file_type"] for document in backend.list_documents())
    return dict(sorted(counts.items()))
