"""Excel workbooks (.xlsx, .xlsm), read with openpyxl in read-only (streaming) mode.

openpyxl is the maintained pure-Python reader of the Office Open XML workbook format (MIT);
its read-only mode parses each sheet's XML as a stream, so a sheet of a million rows is
read row by row. Cached cell values are read (``data_only``): what the spreadsheet program
computed when it last saved the file. A file written by a program (openpyxl, a report
generator) and never opened in a spreadsheet program has formulas with no value stored; such a
cell reads as its formula (``=SUM(B2:B9)``), from a second reading of the sheet, done only
for a sheet that has one. Macros in an .xlsm are never run or read. One page per sheet, rows
as records with their headers (`ragcli.ingest.readers.records`).
"""

from __future__ import annotations

import re
import zipfile
from itertools import zip_longest
from pathlib import Path
from typing import Any, Iterator

from ragcli.ingest.readers.base import build_document
from ragcli.ingest.readers.containers import opened_container
from ragcli.ingest.readers.records import sheet_page
from ragcli.text import PAGE_BREAK
from ragcli.types import Document

_KIND, _HINT = "Excel .xlsx", "re-save it from a spreadsheet program as .xlsx"


# A formula cell with no value stored: the formula's end, no value or an empty one, the cell's end.
_UNCACHED_FORMULA = re.compile(
    rb"(?:</(?:\w+:)?f>|<(?:\w+:)?f\b[^<>]*/>)\s*(?:<(?:\w+:)?v\s*/>|<(?:\w+:)?v>\s*</(?:\w+:)?v>)?\s*</(?:\w+:)?c>"
)
_SCAN_BLOCK = 1 << 20
_SCAN_OVERLAP = 512  # a match cut by a block boundary is found in the next window


def _has_uncached_formula(archive: zipfile.ZipFile, sheet: Any) -> bool:
    """Whether the sheet's XML holds a formula without a stored value; scanned as bytes, far
    cheaper than parsing it again."""
    member = getattr(sheet, "_worksheet_path", None)  # openpyxl's read-only sheet: its part
    if member is None:
        return True
    tail = b""
    with archive.open(member) as stream:
        while block := stream.read(_SCAN_BLOCK):
            window = tail + block
            if _UNCACHED_FORMULA.search(window):
                return True
            tail = window[-_SCAN_OVERLAP:]
    return False


class _WrittenFormulas:
    """The workbook read again with formulas as written, opened when a sheet first needs it."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self._archive = archive
        self._workbook: Any = None

    def sheet(self, sheet: Any) -> Any | None:
        """The sheet with its formulas, or None when every formula in it has a stored value."""
        if not _has_uncached_formula(self._archive, sheet):
            return None
        if self._workbook is None:
            import openpyxl

            self._workbook = openpyxl.load_workbook(
                self._archive.fp, read_only=True, data_only=False, keep_links=False
            )
        return self._workbook[sheet.title]

    def close(self) -> None:
        if self._workbook is not None:
            self._workbook.close()


def _shown(value: Any, written: Any) -> Any:
    """A cell's stored value; its formula ("=B2*2") when it has none."""
    if value is None and written is not None:
        return getattr(written, "text", written)  # an array formula is an object holding its text
    return value


def _rows(sheet: Any, formulas: Any | None = None) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """``(row number, values)``; empty styled rows cost a tuple each, never a cell object.
    With `formulas` (the same sheet read with its formulas), a formula without a stored value
    reads as its formula."""
    start = sheet.min_row or 1
    rows = sheet.iter_rows(values_only=True)
    if formulas is None:
        yield from enumerate(rows, start=start)
        return
    written_rows = formulas.iter_rows(values_only=True)
    for number, (values, written) in enumerate(zip(rows, written_rows), start=start):
        yield number, tuple(_shown(value, formula) for value, formula in zip_longest(values, written))


class SpreadsheetReader:
    """Reads every sheet of an Excel workbook, one page per sheet."""

    suffixes: tuple[str, ...] = (".xlsx", ".xlsm")
    file_type = "xlsx"
    # 2: a date cell reads 2024-03-01, not 2024-03-01T00:00:00
    # 3: a title row above the header is the sheet's title, not its header
    # 4: a formula without a stored value reads as its formula, not as an empty cell
    version = "4"

    def read(self, path: Path) -> Document:
        """Read a workbook into a Document with ``sheets`` (their names) in its metadata.

        Raises:
            ReaderError: the file is not a workbook, is password-protected, corrupt or over
                the zip container limits.
        """
        import openpyxl

        invalid = (zipfile.BadZipFile, KeyError, ValueError, TypeError, IndexError, SyntaxError, OSError)
        with opened_container(path, _KIND, _HINT, invalid) as archive:
            workbook = openpyxl.load_workbook(archive.fp, read_only=True, data_only=True, keep_links=False)
            formulas = _WrittenFormulas(archive)
            try:
                names = list(workbook.sheetnames)
                sheets = [workbook[name] for name in names]
                pages = [sheet_page(sheet.title, _rows(sheet, formulas.sheet(sheet))) for sheet in sheets]
                title = workbook.properties.title
            finally:
                workbook.close()
                formulas.close()
        return build_document(
            path, PAGE_BREAK.join(pages), self.file_type, title=title, pages=len(pages), sheets=names
        )
