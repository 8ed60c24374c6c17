"""`rag embed --background`: the embedding pass in a detached process.

The child is `rag embed` itself, in a session of its own (a closed terminal does not stop
it), writing its output to `embed.log` and its process id to `embed.pid` in the index folder,
where `rag status` finds them (`ragcli.store.status.embedding_job`). The child takes the
index's write lock like any writer, so it waits for (or is waited on by) an ingest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ragcli.store.status import EMBED_LOG, EMBED_PID, embedding_job, process_start, read_job_file


def start_background_embedding(index: Path, options: list[str]) -> dict:
    """Start `rag embed` detached for the index; returns `embedding_job`'s view of it.

    A job already running for this index is not started twice: its view is returned.
    `options` are extra `rag embed` flags (e.g. the lock timeout).
    """
    running = embedding_job(index)
    if running and running["running"]:
        return running
    log = index / EMBED_LOG
    with open(log, "ab") as output, open(os.devnull, "rb") as nothing:
        child = subprocess.Popen(
            [sys.executable, "-m", "ragcli", "embed", "--index", str(index), *options],
            stdin=nothing,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    started = process_start(child.pid)  # tells the job from a later process given its pid
    (index / EMBED_PID).write_text(f"{child.pid} {started or ''}".rstrip() + "\n", encoding="utf-8")
    return {"pid": child.pid, "running": True, "log": str(log)}


def forget_own_job(index: Path) -> None:
    """Remove `embed.pid` when it names this process (a background job that finished)."""
    path = index / EMBED_PID
    try:
        if read_job_file(path)[0] == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass
