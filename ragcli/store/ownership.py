"""Which folders are ragcli's own indexes, so nothing else is ever deleted, renamed or rewritten.

Every index ragcli creates gets a marker file (`MARKER_NAME`). An index made by an earlier
version has no marker but a SQLite `index.db` whose `meta` or migrations table only ragcli
writes; it is recognised by that and given a marker the next time it is opened for writing.
A folder that is neither (a user's documents, a file) is refused with one line, never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from ragcli.errors import RagError

MARKER_NAME = "ragcli-index.json"
# The index layout this rag reads and writes; a newer rag that changes it raises the number,
# and an older rag then refuses the index instead of reading (or writing) what it cannot know.
FORMAT_VERSION = 1
DATABASE_NAME = "index.db"
_SQLITE_MAGIC = b"SQLite format 3\x00"


class NotAnIndex(RagError):
    """A path ragcli was asked to use, replace or remove is not one of its indexes."""


def is_index(path: Path) -> bool:
    """True when `path` is a folder ragcli can prove it created: its marker, or an old index.db."""
    if not path.is_dir() or path.is_symlink():
        return False
    return (path / MARKER_NAME).is_file() or _legacy_database(path / DATABASE_NAME)


def _legacy_database(database: Path) -> bool:
    """An index.db written by ragcli before markers existed (its migrations or meta table)."""
    try:
        with open(database, "rb") as handle:
            if handle.read(16) != _SQLITE_MAGIC:
                return False
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)
    except (OSError, sqlite3.Error):
        return False
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "_sqlite_migrations" in tables:
            return bool(
                conn.execute(
                    "SELECT 1 FROM _sqlite_migrations WHERE migration_set = 'ragcli' LIMIT 1"
                ).fetchone()
            )
        return {"meta", "documents", "chunks"} <= tables
    except sqlite3.Error:
        # A damaged database that still has the SQLite header, in a folder holding nothing
        # but ragcli's own file names, is an index too (so `--rebuild` can replace it).
        return _only_index_files(database.parent)
    finally:
        conn.close()


_INDEX_FILES = {
    DATABASE_NAME,
    DATABASE_NAME + "-wal",
    DATABASE_NAME + "-shm",
    DATABASE_NAME + "-journal",
    "answers.db",
    "answers.db-wal",
    "answers.db-shm",
    "answers.db-journal",
    "migrate.lock",
    "write.lock",
    "vectors",
    "embed.log",
    "embed.pid",
    MARKER_NAME,
}
_VECTOR_SUFFIXES = (".faiss", ".json", ".tmp")


def _only_index_files(folder: Path) -> bool:
    return all(entry.name in _INDEX_FILES for entry in folder.iterdir())


def foreign_entries(folder: Path) -> list[str]:
    """Names inside an index folder that ragcli did not write (a user's files), sorted.

    `vectors/` counts as ragcli's only while it holds nothing but vector and params files.
    """
    if not folder.is_dir() or folder.is_symlink():
        return []
    foreign = [entry.name for entry in folder.iterdir() if entry.name not in _INDEX_FILES]
    vectors = folder / "vectors"
    if vectors.is_symlink() or vectors.is_file():
        foreign.append("vectors")
    elif vectors.is_dir():
        foreign += [
            f"vectors/{entry.name}"
            for entry in vectors.iterdir()
            if not entry.is_file() or not entry.name.endswith(_VECTOR_SUFFIXES)
        ]
    return sorted(foreign)


def require_own_files(path: Path, role: str) -> None:
    """Refuse to replace or delete an index folder that also holds files ragcli did not write.

    Raises:
        NotAnIndex: the folder holds other files; the message names a few of them.
    """
    foreign = foreign_entries(path)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise NotAnIndex(
            f"{path} ({role}) holds files rag did not write ({shown}), so it is left alone: "
            "move them out of the index folder first (nothing was changed)"
        )


def claim_index_dir(path: Path) -> None:
    """Make `path` usable as an index: create it (and its marker) or check that it is one.

    Raises:
        NotAnIndex: `path` is a file, or a non-empty folder that is not a ragcli index.
    """
    is_a_file = f"--index {path} is a file, not an index folder: name a new or empty folder"
    if path.exists() and not path.is_dir():
        raise NotAnIndex(is_a_file)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise NotAnIndex(is_a_file) from None
    except OSError as error:
        raise RagError(f"cannot create the index folder {path}: {error.strerror or error}") from error
    if (path / MARKER_NAME).is_file():
        check_format(path)
        return
    if any(path.iterdir()) and not _being_created(path) and not _legacy_database(path / DATABASE_NAME):
        raise NotAnIndex(
            f"{path} is a folder with other files in it, not a rag index: "
            "pass --index a new or empty folder (nothing was changed)"
        )
    write_marker(path)


def _being_created(path: Path) -> bool:
    """Another ragcli process is creating this index right now: only ragcli's own file names
    (its lock files, a database it has not written yet), and no marker written so far."""
    database = path / DATABASE_NAME
    fresh_database = not database.exists() or database.stat().st_size == 0
    return _only_index_files(path) and fresh_database


def write_marker(path: Path) -> None:
    """Write the marker once; concurrent creators race harmlessly (first one wins)."""
    try:
        fd = os.open(path / MARKER_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"format": "ragcli-index", "version": FORMAT_VERSION}, handle)


def newer_format_message(path: Path, found: object) -> str:
    return (
        f"the index at {path} was written by a newer rag (index format {found}; this rag reads "
        f"format {FORMAT_VERSION}): upgrade rag (pip install -U ragcli) to use it; nothing was changed"
    )


def check_format(path: Path) -> None:
    """Refuse an index whose marker records a format newer than this rag's.

    Raises:
        NotAnIndex: the marker's version is above `FORMAT_VERSION` (or not a number).
    """
    try:
        marker = json.loads((path / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no marker (an index from before markers) or an unreadable one: nothing to check
    version = marker.get("version", FORMAT_VERSION) if isinstance(marker, dict) else FORMAT_VERSION
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise NotAnIndex(newer_format_message(path, version))


def require_index_or_absent(path: Path, role: str) -> None:
    """Refuse to replace or delete `path` unless it is missing or a ragcli index.

    Raises:
        NotAnIndex: `path` exists and is not provably an index; the message says what to do.
    """
    if path.is_symlink() or (path.exists() and not is_index(path)):
        if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
            return  # an empty folder holds nothing to lose
        raise NotAnIndex(
            f"{path} ({role}) is not a rag index, so it is left alone: move it away or choose another --index"
        )


def remove_index(path: Path) -> None:
    """Delete an index folder, only after proving it is one (or an empty folder).

    Raises:
        NotAnIndex: `path` is not a ragcli index, or it also holds files ragcli did not write.
    """
    if not path.exists() and not path.is_symlink():
        return
    require_index_or_absent(path, "to be removed")
    require_own_files(path, "to be removed")
    shutil.rmtree(path)
