"""The Reader protocol and the pieces every reader shares.

A reader turns one file into a `Document`: normalised text plus the file metadata the
store keeps filterable (file_name, file_type, size, modified, created, title, pages).
"""

from __future__ import annotations

import os
import stat
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

from ragcli.errors import ReaderError
from ragcli.types import Document


@runtime_checkable
class Reader(Protocol):
    """Reads one file format into a `Document`.

    Attributes:
        suffixes: Lower-case file suffixes this reader handles, with the dot (".pdf").
        file_type: Short type stored on the document ("txt", "md", "pdf", ...).
        version: Bumped whenever the reader's output changes: it is part of the content hash
            stored for each file it read (`ragcli.ingest.run.read_hash`), so the next ingest
            reads those files again.
    """

    suffixes: tuple[str, ...]
    file_type: str
    version: str

    def read(self, path: Path) -> Document:
        """Read `path` into a Document.

        Raises:
            ReaderError: The file cannot be read; the message names the file and why.
        """
        ...


def reader_error(path: Path, reason: str) -> ReaderError:
    """Build the ReaderError every reader raises: "<path>: <reason>".

    Args:
        path: The file that could not be read.
        reason: What is wrong and, where possible, how to fix it.

    Returns:
        The error, for the caller to raise.
    """
    return ReaderError(f"{path}: {reason}")


def open_regular(path: Path) -> BinaryIO:
    """Open a file for reading, refusing anything but a regular file and never blocking.

    The open is non-blocking (a named pipe swapped in after the folder walk would otherwise
    wait forever for a writer) and the opened descriptor, not the name, is checked, so a
    file replaced between a check and the open cannot slip through.

    Raises:
        ReaderError: the file cannot be opened or is a pipe, device, socket or folder.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise reader_error(
            path, f"cannot read file ({exc.strerror or exc}); check it exists and is readable"
        ) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise reader_error(path, f"not a regular file ({_kind(mode)}); skipped")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    # Outside the guard: once the file object owns the descriptor it closes it itself, so an
    # interrupt inside fdopen must not close it a second time (EBADF would hide the interrupt).
    return os.fdopen(fd, "rb")


def not_regular(path: Path) -> str | None:
    """Why `path` is no regular file to read (a named pipe, a dangling symlink, a symlink loop),
    or None for a regular file. Only the entry is looked at; nothing is opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot read file ({exc.strerror or exc})"
    return None if stat.S_ISREG(mode) else f"not a regular file ({_kind(mode)})"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    return "a folder" if stat.S_ISDIR(mode) else "a device or socket"


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """Read a whole regular file, turning OS errors into a ReaderError.

    Args:
        path: the file.
        limit: most bytes accepted; a larger file is refused before it is read.

    Raises:
        ReaderError: The file is missing, unreadable, a directory or not a regular file, or
            larger than `limit` (the message names the size and the limit).
    """
    with open_regular(path) as handle:
        try:
            if limit is None:
                return handle.read()
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(limit + 1) if size <= limit else b""
            if size > limit or len(data) > limit:  # the second: a file that grew while read
                raise reader_error(path, too_large(max(size, len(data)), limit))
            return data
        except OSError as exc:
            reason = f"cannot read file ({exc.strerror or exc}); check it exists and is readable"
            raise reader_error(path, reason) from exc


def too_large(size: int, limit: int) -> str:
    mib = 1024 * 1024
    return f"too large to read ({size / mib:,.0f} MB; the limit for this format is {limit / mib:,.0f} MB)"


def normalise_text(text: str) -> str:
    """Normalise line endings, drop NUL characters and apply Unicode NFC.

    NFC matters for search: a "é" typed as one code point and one written as "e" plus a
    combining accent must produce the same tokens and the same chunk hash.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return unicodedata.normalize("NFC", text)


def _iso_utc(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def file_metadata(path: Path, file_type: str) -> dict[str, Any]:
    """Return the filesystem metadata every document carries.

    ``created`` comes from ``st_ctime``: the creation time on Windows, the last metadata
    change on Unix, which is the closest portable value.

    Raises:
        ReaderError: The file cannot be stat-ed.
    """
    try:
        st = path.stat()
    except OSError as exc:
        raise reader_error(path, f"cannot read file ({exc.strerror or exc}); check it exists") from exc
    return {
        "file_name": path.name,
        "file_type": file_type,
        "size": st.st_size,
        "modified": _iso_utc(st.st_mtime),
        "created": _iso_utc(st.st_ctime),
    }


def build_document(path: Path, text: str, file_type: str, **extra: Any) -> Document:
    """Assemble a Document with normalised text, the resolved path and full metadata.

    Args:
        path: The file read.
        text: Its extracted text (normalised here).
        file_type: The short type, e.g. "pdf".
        **extra: Extra metadata (title, pages); ``None`` values are left out.

    Returns:
        The Document, with ``path`` absolute and resolved.
    """
    metadata = file_metadata(path, file_type)
    if isinstance(extra.get("title"), str):
        extra["title"] = normalise_text(extra["title"]).strip() or None
    metadata.update({key: value for key, value in extra.items() if value is not None})
    return Document(
        path=str(path.resolve()),
        text=normalise_text(text),
        file_type=file_type,
        metadata=metadata,
    )
