"""Turning storage failures (SQLite, the filesystem) into one `RagError` line that says what to do.

SQLite reports a full disk and a damaged file as exceptions deep inside any statement; they
are translated here, once, at the boundary of a command (`storage_errors`, and the CLI's
error boundary for anything that escapes it), never by wrapping each statement.
"""

from __future__ import annotations

import errno
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ragcli.errors import IndexBusy, IndexCorrupt, RagError, StorageFull

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_CORRUPT_WORDS = ("malformed", "not a database", "disk image", "corrupt")


def corrupt_message(index: Path | str | None, detail: str) -> str:
    where = f"the index database {Path(index) / 'index.db'}" if index else "the index database"
    target = f" --index {index}" if index else ""
    return (
        f"{where} is damaged ({detail}); your documents are untouched: rebuild the index with "
        f"`rag ingest --rebuild{target} DIR...` (run `rag doctor` for details)"
    )


def as_rag_error(error: BaseException, index: Path | str | None = None) -> RagError | None:
    """The `RagError` for a storage failure, or None when `error` is something else."""
    if isinstance(error, RagError):
        return error
    text = str(error)
    where = f" at {index}" if index else ""
    if isinstance(error, sqlite3.DatabaseError):
        lowered = text.lower()
        if "full" in lowered:
            return StorageFull(
                f"disk full while writing the index{where} ({text}): everything committed "
                "before is kept; free some space and run the same command again to resume"
            )
        if isinstance(error, sqlite3.OperationalError) and ("locked" in lowered or "busy" in lowered):
            return IndexBusy(
                f"the index{where} is busy (another rag process is writing to it): try again when it is done"
            )
        if any(word in lowered for word in _CORRUPT_WORDS):
            return IndexCorrupt(corrupt_message(index, text))
        return RagError(f"the index database{where} failed: {text}")
    if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
        return StorageFull(
            f"disk full while writing the index{where} ({error.strerror}): everything "
            "committed before is kept; free some space and run the same command again"
        )
    if isinstance(error, RuntimeError) and "No space left" in text:  # faiss's write errors
        return StorageFull(
            f"disk full while writing the index{where}: everything committed before is "
            "kept; free some space and run the same command again"
        )
    return None


@contextmanager
def storage_errors(index: Path | str | None = None) -> Iterator[None]:
    """Re-raise storage failures inside the block as one clear `RagError`."""
    try:
        yield
    except (sqlite3.DatabaseError, OSError, RuntimeError) as error:
        translated = as_rag_error(error, index)
        if translated is None:
            raise
        raise translated from error
