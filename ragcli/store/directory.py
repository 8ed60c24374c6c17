"""The index directory, on every backend: the folder found, created or refused (its marker,
`ragcli.store.ownership`), its SQLite database opened (`ragcli.store.local.connection`), and
what that database keeps for the folder whatever the backend: meta, chunk groups, transactions.

`IndexDirectory` is that part; the local backend's `ragcli.store.local.database.Store` adds the
documents and chunks tables to it, while an index on Milvus keeps only this part on the machine
(`DirectorySettings` is the backends' view of it).
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Hashable, Iterator, Self, Sequence

from ragcli.errors import IndexCorrupt, NotIndexed, UnknownGroup, UsageError
from ragcli.store.local.connection import connect_database
from ragcli.store.ownership import DATABASE_NAME, check_format, claim_index_dir
from ragcli.types import ChunkSettings

GROUP_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")

__all__ = [
    "DATABASE_NAME",
    "DirectorySettings",
    "IndexDirectory",
    "directory_size",
    "now_iso",
    "read_index_meta",
]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def directory_size(path: Path) -> int:
    """Bytes of a file, or of every file under a folder; 0 when missing."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def read_index_meta(index: Path, key: str) -> str | None:
    """One meta value of the index at `index`; None when there is no index or no such value."""
    if not (index / DATABASE_NAME).is_file():
        return None
    directory = IndexDirectory.open(index)
    try:
        return directory.get_meta(key)
    finally:
        directory.close()


class IndexDirectory:
    """An index folder and its database. Open it with `open` (must exist) or `create`.

    Subclasses hook `_before_commit` and `_after_rollback` to write (or drop) what a
    transaction gathered in memory."""

    _reading = False  # inside a `snapshot` that began the read transaction
    _data_version: int | None = None  # `version`'s data_version, kept for that snapshot

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self.db = db

    @classmethod
    def open(cls, path: Path) -> Self:
        """Open an existing index.

        Raises:
            NotIndexed: there is no index at `path`.
        """
        if path.exists() and not path.is_dir():
            raise NotIndexed(f"--index {path} is a file, not an index folder: pass the index's folder")
        if not (path / DATABASE_NAME).is_file():
            raise NotIndexed(f"no index at {path}: run `rag ingest DIR` first (or pass --index PATH)")
        return cls._connect(path)

    @classmethod
    def create(cls, path: Path) -> Self:
        """Open an index, creating the directory (with its marker) and schema when missing.

        Raises:
            NotAnIndex: `path` is a file, or a non-empty folder that is not a ragcli index.
        """
        claim_index_dir(path)
        return cls._connect(path)

    @classmethod
    def _connect(cls, path: Path) -> Self:
        check_format(path)
        return cls(path, connect_database(path))

    def close(self) -> None:
        self.db.close()

    def check_integrity(self) -> None:
        """Run SQLite's `PRAGMA quick_check` (reads every page once, skips index cross-checks).

        Raises:
            IndexCorrupt: a page is damaged; the message says how to recover.
        """
        from ragcli.store.errors import corrupt_message

        try:
            problems = [row[0] for row in self.db.execute("PRAGMA quick_check(3)").fetchall()]
        except sqlite3.DatabaseError as error:
            raise IndexCorrupt(corrupt_message(self.path, str(error))) from error
        if problems != ["ok"]:
            raise IndexCorrupt(corrupt_message(self.path, "quick_check: " + "; ".join(problems)[:200]))

    def full_integrity_check(self) -> str:
        """SQLite's `PRAGMA integrity_check` (every page and index): "ok" or the first problem."""
        return self.db.execute("PRAGMA integrity_check").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; rolled back on any exception."""
        conn = self.db
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._before_commit()
            conn.execute("COMMIT")
        except BaseException:
            self._after_rollback()
            if conn.in_transaction:  # a failed COMMIT (disk full) must not leave it open
                conn.execute("ROLLBACK")
            raise

    def _before_commit(self) -> None:
        """Write what the transaction gathered in memory (nothing here)."""

    def _after_rollback(self) -> None:
        """Drop what the transaction gathered in memory (nothing here)."""

    def snapshot(self) -> "ReadSnapshot":
        """Reads in the block see one committed state, even while an ingest commits (WAL);
        inside a transaction or another snapshot it adds nothing."""
        return ReadSnapshot(self)

    def version(self) -> tuple[int, int, int]:
        """Changes whenever the database does: by another connection's commit (SQLite's
        `data_version`) or this connection's own writes (`total_changes`).

        Inside a snapshot, `data_version` is read once: no other connection's commit reaches
        an open read transaction (the PRAGMA itself opens it), and a warm BM25 query asks
        twice (the group check and the postings), 1.5 µs a read.
        """
        db = self.db
        data = self._data_version
        if data is None:
            data = db.execute("PRAGMA data_version").fetchone()[0]
            if self._reading:
                self._data_version = data
        return id(db), data, db.total_changes

    def count(self, table: str, where: str = "", params: Sequence[Any] = ()) -> int:
        """Rows of a table of the database (those matching `where`, with its `params`)."""
        sql = f"SELECT count(*) FROM {table}" + (f" WHERE {where}" if where else "")
        return int(self.db.execute(sql, list(params)).fetchone()[0])

    # -- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, str(value)])

    def change_meta(self) -> list[tuple[str, str]]:
        """The meta values every write changes: the last ingest and the vector files' generations."""
        rows = self.db.execute(
            "SELECT key, value FROM meta WHERE key = 'last_ingest' OR key LIKE 'vectors_generation:%' "
            "ORDER BY key"
        )
        return [tuple(row) for row in rows.fetchall()]

    # -- groups -------------------------------------------------------------------------
    def groups(self) -> dict[str, ChunkSettings]:
        rows = self.db.execute("SELECT name, split_by, chunk_size, chunk_overlap FROM groups ORDER BY name")
        return {name: ChunkSettings(by, size, overlap) for name, by, size, overlap in rows.fetchall()}

    def group(self, name: str) -> ChunkSettings:
        """Settings of one group.

        Raises:
            UnknownGroup: the index has no such group; the message lists the ones it has.
        """
        groups = self.groups()
        if name not in groups:
            known = ", ".join(groups) or "none yet"
            raise UnknownGroup(f"unknown group '{name}' (this index has: {known})")
        return groups[name]

    def ensure_group(self, name: str, settings: ChunkSettings) -> bool:
        """Create or update a group; True when its chunking settings changed."""
        if not GROUP_NAME.match(name):
            raise UsageError(f"--group '{name}': use letters, digits and _ (starting with a letter)")
        old = self.groups().get(name)
        if old == settings:
            return False
        self.db.execute(
            "INSERT OR REPLACE INTO groups (name, split_by, chunk_size, chunk_overlap, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [name, settings.split_by, settings.chunk_size, settings.chunk_overlap, now_iso()],
        )
        return old is not None


def integrity(directory: IndexDirectory) -> str:
    """The doctor's probe of the database: SQLite's full integrity check."""
    result = directory.full_integrity_check()
    if result != "ok":
        raise RuntimeError(f"integrity_check: {result}")
    return "integrity_check ok"


class ReadSnapshot:
    """`IndexDirectory.snapshot`: BEGIN on entry and COMMIT on exit unless a transaction is
    already open. A plain class rather than `contextlib.contextmanager`: a warm BM25 query
    enters two, and the generator machinery cost about a microsecond each."""

    __slots__ = ("directory", "began")

    def __init__(self, directory: IndexDirectory) -> None:
        self.directory = directory

    def __enter__(self) -> None:
        directory = self.directory
        self.began = not directory.db.in_transaction
        if self.began:
            directory.db.execute("BEGIN")
            directory._reading = True

    def __exit__(self, *exc: object) -> None:
        if self.began:
            directory = self.directory
            directory._reading, directory._data_version = False, None
            directory.db.execute("COMMIT")


class DirectorySettings:
    """Meta and chunk groups kept in the index directory's own database, on every backend."""

    store: IndexDirectory

    def set_meta(self, key: str, value: Any) -> None:
        self.store.set_meta(key, value)

    def version(self) -> Hashable | None:
        """None: the content lives elsewhere, so no read of it may be kept between queries."""
        return None

    def snapshot(self) -> AbstractContextManager[None]:
        """Nothing to hold: the content lives elsewhere."""
        return nullcontext()

    def change_meta(self) -> list[tuple[str, str]]:
        return self.store.change_meta()

    def groups(self) -> dict[str, ChunkSettings]:
        return self.store.groups()

    def group(self, name: str) -> ChunkSettings:
        return self.store.group(name)

    def ensure_group(self, name: str, settings: ChunkSettings) -> bool:
        return self.store.ensure_group(name, settings)
