"""Document readers: one module per format and a registry keyed by file suffix.

Usage::

    from ragcli.ingest.readers import read_document, reader_for, SUPPORTED_SUFFIXES
    document = read_document(Path("notes.md"))

Each reader's third-party parser (pypdf, python-docx, selectolax) is imported only when
a file of its format is read, so importing this package stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from ragcli.errors import ReaderError
from ragcli.ingest.readers.base import Reader, open_regular, reader_error
from ragcli.ingest.readers.delimited import DelimitedReader
from ragcli.ingest.readers.docx import DocxReader
from ragcli.ingest.readers.epub import EpubReader
from ragcli.ingest.readers.html import HtmlReader
from ragcli.ingest.readers.mail import Attachments, MailReader, MboxReader
from ragcli.ingest.readers.markdown import MarkdownReader
from ragcli.ingest.readers.ocr import ImageReader
from ragcli.ingest.readers.opendocument import OdsReader, OdtReader
from ragcli.ingest.readers.pdf import PdfReader
from ragcli.ingest.readers.rtf import RtfReader
from ragcli.ingest.readers.slides import LegacySlidesReader, SlidesReader
from ragcli.ingest.readers.sniff import sniffed_suffix
from ragcli.ingest.readers.source import SourceReader
from ragcli.ingest.readers.spreadsheet import SpreadsheetReader
from ragcli.ingest.readers.text import TextReader, has_unicode_bom, sniff_utf16
from ragcli.types import Document

__all__ = [
    "READERS",
    "TEXT_FILE_TYPES",
    "SUPPORTED_SUFFIXES",
    "Reader",
    "is_probably_binary",
    "read_document",
    "reader_for",
    "reader_versions",
]


def _attachment_supported(name: str) -> bool:
    """A mail attachment is read when its suffix has a reader other than mail's own."""
    reader = READERS.get(Path(name).suffix.lower())
    return reader is not None and reader.file_type not in ("eml", "mbox")


# Mail attachments are read by the same registry (late-bound: READERS is built below).
_ATTACHMENTS = Attachments(supports=_attachment_supported, read=lambda path: read_document(path))

_BUILTIN_READERS: tuple[Reader, ...] = (
    TextReader(),
    MarkdownReader(),
    PdfReader(),
    DocxReader(),
    HtmlReader(),
    SlidesReader(),
    LegacySlidesReader(),
    SpreadsheetReader(),
    OdsReader(),
    DelimitedReader(),
    OdtReader(),
    RtfReader(),
    EpubReader(),
    SourceReader(),
    MailReader(_ATTACHMENTS),
    MboxReader(_ATTACHMENTS),
    ImageReader(),
)

# Formats read as text (sniffed for NUL bytes like any text file); the others are containers.
TEXT_FILE_TYPES = frozenset({"txt", "md", "html", "code", "csv", "eml", "mbox"})

# Read-only: the registry is fixed at import, so no module can change another's readers.
READERS: Mapping[str, Reader] = MappingProxyType(
    {suffix: reader for reader in _BUILTIN_READERS for suffix in reader.suffixes}
)
SUPPORTED_SUFFIXES: frozenset[str] = frozenset(READERS)

_SNIFF_BYTES = 8192


def reader_for(path: Path | str) -> Reader | None:
    """Return the reader for a file's suffix (any case); for a file whose suffix has none,
    the reader its content names (`sniffed_suffix`: PDF, RTF, mail, zip formats, images);
    else None."""
    reader = READERS.get(Path(path).suffix.lower())
    if reader is None:
        reader = READERS.get(sniffed_suffix(Path(path)) or "")
    return reader


def reader_versions() -> dict[str, str]:
    """Return ``{file_type: version}`` for every reader (what `read_hash` folds into a file's hash)."""
    return {reader.file_type: reader.version for reader in _BUILTIN_READERS}


def read_document(path: Path) -> Document:
    """Read any supported file into a Document.

    Args:
        path: The file to read.

    Returns:
        The Document; ``path`` is absolute and resolved, ``metadata`` has file_name,
        file_type, size, modified and created (ISO-8601 UTC), plus title and pages
        where the format provides them.

    Raises:
        ReaderError: The suffix is not supported, the file is missing, or its reader
            cannot read it; the message names the file and the reason.
    """
    path = Path(path)
    reader = reader_for(path)
    if reader is None:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise reader_error(
            path,
            f"unsupported file type {path.suffix or '(no suffix)'!r}; supported: {supported}",
        )
    if not path.is_file():
        raise reader_error(path, "no such file; check the path")
    return reader.read(path)


def is_probably_binary(path: Path) -> bool:
    """Return True if the file's first 8 KiB contain a NUL byte.

    This is a content sniff for the walker, to skip binary files among text-like ones.
    PDF and DOCX files are binary containers by nature and usually answer True, so call
    it only for files whose reader is text-based (txt, md, html) or that have no reader.
    A UTF-16/UTF-32 file with a BOM has NUL bytes but is text, so it answers False; so does
    UTF-16 without a BOM whose NUL bytes fall on one side of each pair (see `sniff_utf16`).

    Args:
        path: The file to sniff.

    Returns:
        True for binary content; False for text or an unreadable file (whose reader
        will then report the real problem).
    """
    try:
        with open_regular(path) as handle:
            head = handle.read(_SNIFF_BYTES)
    except (OSError, ReaderError):
        return False
    return b"\x00" in head and not has_unicode_bom(head) and sniff_utf16(head) is None
