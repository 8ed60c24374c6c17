"""Excel workbooks (.xlsx, .xlsm), read with openpyxl in read-only (streaming) mode.

openpyxl is the maintained pure-Python reader of the Office Open XML workbook format (MIT);
its read-only mode parses each sheet's XML as a stream, so a sheet of a million rows is
read row by row. Cached cell values are read (``data_only``), never formulas, and macros in
an .xlsm are never run or read. One page per sheet, rows as records with their headers
(`ragcli.ingest.readers.records`).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, Iterator

from ragcli.ingest.readers.base import build_document
from ragcli.ingest.readers.containers import opened_container
from ragcli.ingest.readers.records import sheet_page
from ragcli.text import PAGE_BREAK
from ragcli.types import Document

_KIND, _HINT = "Excel .xlsx", "re-save it from a spreadsheet program as .xlsx"


def _rows(sheet: Any) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """``(row number, values)``; empty styled rows cost a tuple each, never a cell object."""
    for number, values in enumerate(sheet.iter_rows(values_only=True), start=sheet.min_row or 1):
        yield number, values


class SpreadsheetReader:
    """Reads every sheet of an Excel workbook, one page per sheet."""

    suffixes: tuple[str, ...] = (".xlsx", ".xlsm")
    file_type = "xlsx"
    # 2: a date cell reads 2024-03-01, not 2024-03-01T00:00:00
    # 3: a title row above the header is the sheet's title, not its header
    version = "3"

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
            try:
                names = list(workbook.sheetnames)
                pages = [sheet_page(name, _rows(workbook[name])) for name in names]
                title = workbook.properties.title
            finally:
                workbook.close()
        return build_document(
            path, PAGE_BREAK.join(pages), self.file_type, title=title, pages=len(pages), sheets=names
        )
