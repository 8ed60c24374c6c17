"""OpenDocument spreadsheets (.ods) and text (.odt), streamed from content.xml with defusedxml.

An OpenDocument file is a zip whose ``content.xml`` holds the body. It is parsed here as a
stream of events (defusedxml's iterparse: no entities, no external references), clearing each
row or paragraph once used, so memory follows one row, not the sheet. The tree-building
libraries (odfpy, and pandas on top of it) hold the whole document object model, which for a
sheet with a million styled rows is gigabytes; the format needs only the few elements below.
Repeated rows and cells (``number-rows-repeated``: how a sheet says "a million empty rows")
are counted, not expanded.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator

from ragcli.ingest.readers.base import build_document, reader_error
from ragcli.ingest.readers.containers import iter_xml, local_name, opened_container
from ragcli.ingest.readers.opendocument_text import read_list_styles, text_blocks
from ragcli.ingest.readers.records import sheet_page
from ragcli.text import PAGE_BREAK
from ragcli.types import Document

_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_ROWS_REPEATED = f"{{{_TABLE}}}number-rows-repeated"
_COLUMNS_REPEATED = f"{{{_TABLE}}}number-columns-repeated"
_NAME = f"{{{_TABLE}}}name"
# A repeated non-empty cell or row is expanded at most this often (real sheets repeat a few).
MAX_REPEAT = 1000


def _repeat(element: Any, attribute: str) -> int:
    try:
        return max(1, int(element.get(attribute, "1")))
    except ValueError:
        return 1


def _text(element: Any) -> str:
    """An element's text with <text:s/>, tabs and line breaks as spaces."""
    for inner in element.iter():
        if local_name(inner.tag) in ("s", "tab", "line-break"):
            inner.text = " "
    return " ".join("".join(element.itertext()).split())


def _cells(row: Any) -> list[str]:
    cells: list[str] = []
    for cell in row:
        if local_name(cell.tag) not in ("table-cell", "covered-table-cell"):
            continue
        text = " ".join(_text(p) for p in cell if local_name(p.tag) == "p")
        count = _repeat(cell, _COLUMNS_REPEATED)
        cells.extend([text] * min(count, MAX_REPEAT))
    while cells and not cells[-1]:
        cells.pop()
    return cells


def _sheets(path: Path, stream: IO[bytes]) -> Iterator[tuple[str, Iterator[tuple[int, list[str]]]]]:
    """Yield each table's name and its rows, reading content.xml once, as a stream."""
    events = iter_xml(path, stream)
    for event, element in events:
        if event == "start" and local_name(element.tag) == "table" and element.tag.startswith("{" + _TABLE):
            yield element.get(_NAME, ""), _table_rows(element, events)


def _table_rows(table: Any, events: Iterator[tuple[str, Any]]) -> Iterator[tuple[int, list[str]]]:
    """The table's non-empty rows; each row is dropped from the tree once read."""
    number = 1
    for event, element in events:
        name = local_name(element.tag)
        if event == "end" and name == "table-row":
            repeat = _repeat(element, _ROWS_REPEATED)
            cells = _cells(element)
            element.clear()
            del table[:]  # rows (and row groups) already read: memory stays one row
            if cells:
                for offset in range(min(repeat, MAX_REPEAT)):
                    yield number + offset, cells
            number += repeat
        elif event == "end" and name == "table":
            element.clear()
            return


class OdsReader:
    """Reads OpenDocument spreadsheets, one page per sheet."""

    suffixes: tuple[str, ...] = (".ods",)
    file_type = "ods"
    version = "2"  # 2: a title row above the header is the sheet's title, not its header

    def read(self, path: Path) -> Document:
        """Raises: ReaderError: not an .ods, corrupt, encrypted or over the container limits."""
        names, pages = [], []
        with (
            opened_container(path, "OpenDocument .ods", "re-save it as .ods") as archive,
            _content(path, archive) as stream,
        ):
            for name, rows in _sheets(path, stream):
                names.append(name)
                pages.append(sheet_page(name, rows))
        return build_document(path, PAGE_BREAK.join(pages), self.file_type, pages=len(pages), sheets=names)


class OdtReader:
    """Reads the text of OpenDocument text files (`ragcli.ingest.readers.opendocument_text`)."""

    suffixes: tuple[str, ...] = (".odt",)
    file_type = "odt"
    # 2: list items start with their number or bullet, tables are one line per row, notes
    #    and comments follow their paragraph, deleted tracked text is left out
    version = "2"

    def read(self, path: Path) -> Document:
        """Raises: ReaderError: not an .odt, corrupt, encrypted or over the container limits."""
        with (
            opened_container(path, "OpenDocument .odt", "re-save it as .odt") as archive,
            _content(path, archive) as content,
        ):
            with _member(archive, "styles.xml") as stream:  # named list styles
                styles = read_list_styles(path, stream)
            blocks = list(text_blocks(path, content, styles))
        return build_document(path, "\n\n".join(blocks), self.file_type, title=blocks[0] if blocks else None)


@contextmanager
def _member(archive: Any, name: str) -> Iterator[IO[bytes] | None]:
    """An optional member of the package, None when it is missing."""
    try:
        stream = archive.open(name)
    except KeyError:
        yield None
        return
    with stream:
        yield stream


def _content(path: Path, archive: Any) -> IO[bytes]:
    """content.xml; an encrypted document (manifest encryption-data) cannot be read."""
    try:
        manifest = archive.read("META-INF/manifest.xml")
    except KeyError:
        manifest = b""
    if b"encryption-data" in manifest:
        raise reader_error(path, "password-protected OpenDocument file; save an unprotected copy")
    try:
        return archive.open("content.xml")
    except KeyError as exc:
        raise reader_error(path, "not an OpenDocument file (no content.xml); re-save it") from exc
