"""Word documents (.docx), read with python-docx.

Paragraphs and tables are read in body order, because a table usually belongs to the
paragraph that introduces it. Each table row becomes one line, its cells joined by
" | ". A list item starts with its marker as Word shows it ("1. ", "a) ", "- "), indented two
spaces a level (`ragcli.ingest.readers.numbering`), so an answer can tell where a list ends.
python-docx is imported when a file is read, not at start-up.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

from ragcli.ingest.readers.base import read_bytes, build_document, reader_error
from ragcli.ingest.readers.containers import check_container
from ragcli.ingest.readers.numbering import ListMarkers
from ragcli.types import Document

CELL_SEPARATOR = " | "
_TITLE_STYLES = ("Title", "Heading 1")
# Headings keep their text alone: a numbered heading ("1. Scope") read as a list item would
# no longer start a section.
_HEADING_STYLE = re.compile(r"Title|Subtitle|Heading \d")


def _row_text(row: Any) -> str:
    """Join a row's cells; a merged cell is listed once, not once per grid column."""
    seen: set[int] = set()
    texts: list[str] = []
    for cell in row.cells:
        # python-docx repeats a horizontally merged cell for every column it spans;
        # the underlying <w:tc> element is the same object each time.
        if id(cell._tc) not in seen:
            seen.add(id(cell._tc))
            texts.append(" ".join(cell.text.split()))
    return CELL_SEPARATOR.join(texts)


def _table_text(table: Any) -> str:
    """Return a table as one line per row."""
    return "\n".join(line for line in (_row_text(row) for row in table.rows) if line.strip(" |"))


def _blocks(document: Any) -> list[str]:
    """Return the non-empty paragraphs and tables of the body, in order."""
    from docx.table import Table

    markers = ListMarkers(document)
    blocks = []
    for item in document.iter_inner_content():
        text = _table_text(item) if isinstance(item, Table) else _paragraph_text(item, markers)
        if text:
            blocks.append(text)
    return blocks


def _paragraph_text(paragraph: Any, markers: ListMarkers) -> str:
    """A paragraph's text, a list item's after its marker; "" for an empty paragraph."""
    style = paragraph.style.name if paragraph.style is not None else ""
    marker = "" if _HEADING_STYLE.fullmatch(style or "") else markers.marker(paragraph)
    text = paragraph.text.strip()
    return marker + text if text else ""


def _title(document: Any) -> str | None:
    """Return the core-properties title, else the first Title or Heading 1 paragraph."""
    if document.core_properties.title:
        return document.core_properties.title
    for paragraph in document.paragraphs:
        style = paragraph.style.name if paragraph.style is not None else ""
        if style in _TITLE_STYLES and paragraph.text.strip():
            return paragraph.text
    return None


class DocxReader:
    """Reads the body text and tables of Word .docx files."""

    suffixes: tuple[str, ...] = (".docx",)
    file_type = "docx"
    version = "2"  # 2: list items start with their number or bullet

    def read(self, path: Path) -> Document:
        """Read a .docx file into a Document; blocks are separated by blank lines.

        Raises:
            ReaderError: The file is unreadable or not a valid .docx package.
        """
        import docx
        from docx.opc.exceptions import PackageNotFoundError

        # Limits and entity declarations first: python-docx would inflate every part in memory.
        check_container(path, "DOCX", "re-save it from Word as .docx")
        try:
            document = docx.Document(io.BytesIO(read_bytes(path)))  # regular files only
            blocks, title = _blocks(document), _title(document)
        except (
            PackageNotFoundError,
            zipfile.BadZipFile,
            KeyError,
            ValueError,
            SyntaxError,
        ) as exc:
            # lxml's XMLSyntaxError is a SyntaxError; legacy .doc files land here too.
            detail = "not a Word zip package" if isinstance(exc, PackageNotFoundError) else exc
            reason = f"not a valid DOCX file ({detail or type(exc).__name__}); re-save it from Word as .docx"
            raise reader_error(path, reason) from exc
        except OSError as exc:
            raise reader_error(path, f"cannot read file ({exc.strerror or exc})") from exc
        return build_document(path, "\n\n".join(blocks), self.file_type, title=title)
