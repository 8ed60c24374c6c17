"""Content sniffing: the format of a file whose suffix names no reader, from its first bytes.

Only document signatures that cannot be mistaken are used (PDF and RTF magic, an mbox's
"From " line, the zip member that names an Office, OpenDocument or EPUB format), so a text
file without a suffix stays unread as before. Images are not sniffed: a binary file with an
image header and another suffix (a thumbnail cache, an icon) is not a scan to OCR.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from ragcli.ingest.readers.base import open_regular

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", ".pdf"),
    (b"{\\rtf", ".rtf"),
)
_OPENDOCUMENT = {
    b"application/epub+zip": ".epub",
    b"application/vnd.oasis.opendocument.text": ".odt",
    b"application/vnd.oasis.opendocument.spreadsheet": ".ods",
}
_OFFICE_PARTS = (
    ("word/document.xml", ".docx"),
    ("ppt/presentation.xml", ".pptx"),
    ("xl/workbook.xml", ".xlsx"),
)


def _zip_suffix(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if "mimetype" in names:
                return _OPENDOCUMENT.get(archive.read("mimetype").strip())
            return next((suffix for part, suffix in _OFFICE_PARTS if part in names), None)
    except (zipfile.BadZipFile, OSError, KeyError, ValueError):
        return None


def sniffed_suffix(path: Path) -> str | None:
    """The suffix of the format `path` holds, or None (unknown, unreadable or not a file)."""
    try:
        with open_regular(path) as handle:
            head = handle.read(64)
    except Exception:
        return None
    for magic, suffix in _MAGIC:
        if head.startswith(magic):
            return suffix
    if head.startswith(b"From ") and b"\n" in head:
        return ".mbox"
    if head.startswith(b"PK\x03\x04"):
        return _zip_suffix(path)
    return None
