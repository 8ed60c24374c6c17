"""The index directory's SQLite connection: opened in WAL mode, migrated when behind, and its
failures (busy, read-only, damaged, written by a newer rag) told as one line each."""

from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ragcli.errors import IndexBusy, IndexCorrupt, RagError
from ragcli.locking import exclusive
from ragcli.store.local.schema import MIGRATION_NAMES
from ragcli.store.ownership import DATABASE_NAME, NotAnIndex, newer_format_message

MIGRATION_LOCK = "migrate.lock"


def connect_database(path: Path) -> sqlite3.Connection:
    """The index's database connection (autocommit: `Store.transaction` begins and commits),
    its schema migrated to this rag's.

    Raises:
        NotAnIndex: a newer rag migrated the database.
        IndexBusy, RagError (read-only), IndexCorrupt: it cannot be opened.
    """
    # A plain sqlite3 connection: sqlite-utils (which imports pandas when present, ~0.5 s)
    # is loaded only when a migration is pending, keeping cold queries fast.
    try:
        conn = sqlite3.connect(
            str(path / DATABASE_NAME), timeout=30, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if _pending_migrations(conn):
            # Several processes may open an index right after an upgrade: one migrates,
            # the others wait and then find nothing left to do.
            with exclusive(path / MIGRATION_LOCK):
                if _pending_migrations(conn):
                    _apply_migrations(conn)
    except IndexTooNew as error:
        conn.close()
        raise NotAnIndex(newer_format_message(path, error)) from None
    except sqlite3.DatabaseError as error:
        busy = "locked" in str(error) or "busy" in str(error)
        if isinstance(error, sqlite3.OperationalError) and busy:
            raise IndexBusy(
                f"{path / DATABASE_NAME} is busy (another rag process is writing to it): "
                "try again when it is done"
            ) from error
        if not _writable(path):
            raise RagError(read_only_message(path, str(error))) from error
        raise IndexCorrupt(
            f"{path / DATABASE_NAME} cannot be opened ({error}): move it away and run `rag ingest` again"
        ) from error
    return conn


class IndexTooNew(Exception):
    """Internal: the database holds migrations this rag does not know."""


def _writable(index: Path) -> bool:
    """Whether rag can write the index folder and its database (a read-only mount, a folder
    without write permission, a database file without it: all read as not writable)."""
    database = index / DATABASE_NAME
    return os.access(index, os.W_OK) and (not database.exists() or os.access(database, os.W_OK))


def read_only_message(index: Path, detail: str) -> str:
    return (
        f"the index at {index} is read-only ({detail}): rag writes to the index folder even to "
        f"answer a query (its lock and journal files); make it writable (chmod -R u+w {index}) "
        "or copy the folder somewhere writable and pass --index there; the index itself is fine"
    )


def _pending_migrations(conn: sqlite3.Connection) -> bool:
    try:
        applied = {
            row[0]
            for row in conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = 'ragcli'")
        }
    except sqlite3.OperationalError:  # a new database: no migrations table yet
        return True
    unknown = sorted(applied - set(MIGRATION_NAMES))
    if unknown:  # migrated by a newer rag: its tables may mean what this one cannot know
        raise IndexTooNew(f"schema {unknown[-1]}")
    return not set(MIGRATION_NAMES) <= applied


def _apply_migrations(conn: sqlite3.Connection) -> None:
    with _without_pandas():
        import sqlite_utils

    from ragcli.store.local.migrations import migrations

    migrations.apply(sqlite_utils.Database(conn))


@contextmanager
def _without_pandas() -> Iterator[None]:
    """Import sqlite-utils without the pandas it loads when present (0.38 s of CPU, every new
    index): it only adds pandas' Timestamp to its column types, which ragcli never passes.
    A `None` in `sys.modules` makes that optional import fail; pandas stays importable after."""
    import sys

    if "pandas" in sys.modules or "sqlite_utils" in sys.modules:
        yield
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]
