"""Stopping a running `rag` child between two of its commits, on any machine speed.

A test that must act mid-run (kill the child, send it Ctrl-C, swap a file it has not read
yet) cannot rely on seeing a state in time: a fast machine may commit the rest of the run
between two looks. The index's SQLite database is the child's clock instead: `writes_held`
waits until a state is committed, then takes the database's write lock (BEGIN IMMEDIATE).
From then on the child commits nothing (its connection waits up to its busy timeout, 30 s),
so it cannot finish, and what the test reads inside the block is the state it acts on.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

BUSY_TIMEOUT = 30.0  # the child's PRAGMA busy_timeout (ragcli.store.local.connection): hold less


def query_int(conn: sqlite3.Connection, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])


@contextmanager
def writes_held(
    index: Path,
    process: subprocess.Popen,
    ready: Callable[[sqlite3.Connection], bool],
    what: str,
    deadline: float = 300.0,
) -> Iterator[sqlite3.Connection]:
    """Once `ready(connection)` holds for the index the running `process` writes, hold the
    index's write lock for the block and yield a connection that reads the frozen state.

    `ready` is checked again under the lock (the child may have committed more meanwhile); the
    block runs only while the child is alive and the state is `ready`. Keep the block short:
    the child gives up on the lock after BUSY_TIMEOUT seconds. `deadline` is a safety net for a
    child that hangs, not a timing check.
    """
    database = index / "index.db"
    end = time.monotonic() + deadline
    while True:
        assert process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < end, f"no {what} within {deadline:g} s"
        if database.exists() and _ready(database, ready):
            break
        time.sleep(0.002)  # a short look: the child commits many small batches per second
    conn = sqlite3.connect(database, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            assert process.poll() is None, f"the run ended before the test held it at {what}"
            assert ready(conn), f"the run went past {what} before the test held it"
            yield conn
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()


def killed_when(
    index: Path,
    process: subprocess.Popen,
    ready: Callable[[sqlite3.Connection], bool],
    what: str,
    seen: Callable[[sqlite3.Connection], Any] | None = None,
) -> Any:
    """Kill -9 the running `process` once `ready` holds, while the test holds the write lock
    (`writes_held`); returns `seen(connection)` read there, the state the kill leaves (None
    when not asked). The child never outlives the call."""
    try:
        with writes_held(index, process, ready, what) as conn:
            state = seen(conn) if seen is not None else None
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        return state
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _ready(database: Path, ready: Callable[[sqlite3.Connection], bool]) -> bool:
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return False
    try:
        return ready(conn)
    except sqlite3.Error:  # its schema not written yet
        return False
    finally:
        conn.close()
