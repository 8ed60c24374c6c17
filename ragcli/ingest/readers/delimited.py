"""Delimited tables (.csv, .tsv), read with the standard library's csv module, streaming.

The file is decoded and parsed row by row, so a million-row CSV never sits in memory as cells;
rows become records with their column headers (`ragcli.ingest.readers.records`). The
delimiter of a .csv is sniffed from its first 64 KiB (comma, semicolon, tab or pipe: Excel
writes semicolons in many locales); a .tsv is tab-separated.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterator

from ragcli.ingest.readers.base import build_document, open_regular, reader_error
from ragcli.ingest.readers.records import sheet_page
from ragcli.types import Document

_SNIFF_CHARS = 65536
_DELIMITERS = ",;\t|"


def _dialect(head: str, suffix: str) -> type[csv.Dialect] | csv.Dialect:
    if suffix == ".tsv":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff(head, delimiters=_DELIMITERS)
    except csv.Error:
        return csv.excel


class DelimitedReader:
    """Reads CSV and TSV files as one page of row records."""

    suffixes: tuple[str, ...] = (".csv", ".tsv")
    file_type = "csv"
    version = "2"  # 2: a title row above the header is the table's title, not its header

    def read(self, path: Path) -> Document:
        """Read a CSV/TSV file (UTF-8, with or without a BOM).

        Raises:
            ReaderError: the file cannot be read, is not UTF-8, or is malformed (e.g. a field
                over the csv module's size limit).
        """
        with open_regular(path) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
            try:
                head = text.read(_SNIFF_CHARS)
                dialect = _dialect(head, path.suffix.lower())
                rows = csv.reader(_rejoin(head, text), dialect)
                page = sheet_page("", ((number, cells) for number, cells in enumerate(rows, 1)))
            except UnicodeDecodeError as exc:
                raise reader_error(
                    path, f"not valid UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8 CSV"
                ) from exc
            except csv.Error as exc:
                raise reader_error(path, f"malformed CSV ({exc})") from exc
        return build_document(path, page, self.file_type, title=path.stem, sheets=1)


def _rejoin(head: str, rest: io.TextIOWrapper) -> Iterator[str]:
    """The sniffed head followed by the rest of the stream, as whole lines for csv.reader."""
    carry = ""
    for line in io.StringIO(head).readlines():
        if line.endswith(("\n", "\r")):
            yield carry + line
            carry = ""
        else:
            carry += line
    for line in rest:
        yield carry + line
        carry = ""
    if carry:
        yield carry
