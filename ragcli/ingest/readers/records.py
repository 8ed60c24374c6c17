"""Table rows as searchable records, shared by the spreadsheet readers (.csv .tsv .xlsx .xlsm .ods).

A sheet becomes one page (pages are separated by ``\\f``, as in PDFs): a heading line naming
the sheet and its row range, then one line per non-empty row::

    Sheet: Revenue (rows 2-41)
    row 2: Region: North; Q3 revenue: 1.2M

The header row (the first non-empty one, or the one below a title row) names the values, so a
row can be found by the words of its column and quoted as evidence; the ``row N`` prefix is
the spreadsheet's own row number, so any chunk of a long sheet says which rows it holds. Rows
are rendered one at a time from an iterator, so a reader can stream a million-row file without
holding its cells.
"""

from __future__ import annotations

import datetime
from typing import Any, Iterable, Iterator

FIELD_SEPARATOR = "; "
_BLOCK_LINES = 10_000


def cell_text(value: Any) -> str:
    """A cell as one line of text: whole floats without ".0", a date without a midnight time
    (Excel stores a date as a date-time; openpyxl reads a date cell as midnight of that day),
    whitespace collapsed."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, datetime.datetime) and value.time() == datetime.time() and value.tzinfo is None:
        value = value.date().isoformat()
    elif hasattr(value, "isoformat"):
        value = value.isoformat()
    return " ".join(str(value).split())


def _column_name(index: int) -> str:
    return f"column {index + 1}"


def sheet_lines(name: str, rows: Iterable[tuple[int, Iterable[Any]]]) -> Iterator[str]:
    """Render one sheet: its record lines, then (last) its heading line.

    A first row with one filled cell above a row with several (a title typed over the table,
    often merged across it) is the sheet's title, named in the heading; the row below it is
    the header. A one-column sheet keeps its first row as its header.

    Args:
        name: the sheet name ("" for a CSV file, whose file name says it).
        rows: ``(row_number, cells)`` in order; empty rows are skipped.

    Yields:
        ``row N: Header: value; ...`` lines, then the heading ``Sheet: NAME (rows A-B)``,
        which the caller puts first (the range is known only at the end).
    """
    header: list[str] | None = None
    title: list[str] | None = None  # a one-cell first row, until the next row says what it is
    first = last = None
    for number, cells in rows:
        texts = [cell_text(value) for value in cells]
        filled = sum(1 for text in texts if text)
        if not filled:
            continue
        if header is None:
            if title is None and filled == 1:
                title = texts
                continue
            if title is not None and filled == 1:  # one column: the first row was its header
                header, title = _header(title), None
            else:
                header = _header(texts)
                continue
        first = number if first is None else first
        last = number
        yield f"row {number}: {_record(header, texts)}"
    if header is None and title is not None:  # the sheet is its one-cell first row alone
        header, title = _header(title), None
    yield _heading(name, header, title, first, last)


def _header(texts: list[str]) -> list[str]:
    return [text or _column_name(i) for i, text in enumerate(texts)]


def _record(header: list[str], texts: list[str]) -> str:
    fields = [
        f"{header[i] if i < len(header) else _column_name(i)}: {text}" for i, text in enumerate(texts) if text
    ]
    return FIELD_SEPARATOR.join(fields)


def _heading(
    name: str, header: list[str] | None, title: list[str] | None, first: int | None, last: int | None
) -> str:
    """``Sheet: NAME (TITLE; rows A-B; columns: ...)``, or what an empty sheet holds."""
    label = f"Sheet: {name}" if name else "Table"
    titled = f"{' '.join(text for text in title if text)}; " if title else ""
    if first is None:
        return f"{label} ({titled}header only: {', '.join(header)})" if header else f"{label} (empty)"
    return f"{label} ({titled}rows {first}-{last}; columns: {', '.join(header or [])})"


def sheet_page(name: str, rows: Iterable[tuple[int, Iterable[Any]]]) -> str:
    """One sheet as a page: heading line first, then the records.

    Lines are joined in blocks as they come, so a million rows cost the page's text twice at
    most (the blocks and the page), not a million small string objects on top.
    """
    blocks: list[str] = []
    lines: list[str] = []
    for line in sheet_lines(name, rows):
        lines.append(line)
        if len(lines) > _BLOCK_LINES:
            blocks.append("\n".join(lines[:-1]))
            del lines[:-1]
    heading = lines.pop()  # sheet_lines yields the heading last
    if lines:
        blocks.append("\n".join(lines))
    return "\n".join([heading, *blocks])
