"""Table rows as searchable records, shared by the spreadsheet readers (.csv .tsv .xlsx .xlsm .ods).

A sheet becomes one page (pages are separated by ``\\f``, as in PDFs): a heading line naming
the sheet and its row range, then one line per non-empty row::

    Sheet: Revenue (rows 2-41)
    row 2: Region: North; Q3 revenue: 1.2M

The header row (the first non-empty one) names the values, so a row can be found by the words
of its column and quoted as evidence; the ``row N`` prefix is the spreadsheet's own row number,
so any chunk of a long sheet says which rows it holds. Rows are rendered one at a time from
an iterator, so a reader can stream a million-row file without holding its cells.
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

    Args:
        name: the sheet name ("" for a CSV file, whose file name says it).
        rows: ``(row_number, cells)`` in order; empty rows are skipped.

    Yields:
        ``row N: Header: value; ...`` lines, then the heading ``Sheet: NAME (rows A-B)``,
        which the caller puts first (the range is known only at the end).
    """
    header: list[str] | None = None
    first = last = None
    for number, cells in rows:
        texts = [cell_text(value) for value in cells]
        if not any(texts):
            continue
        if header is None:
            header = [text or _column_name(i) for i, text in enumerate(texts)]
            continue
        fields = [
            f"{header[i] if i < len(header) else _column_name(i)}: {text}"
            for i, text in enumerate(texts)
            if text
        ]
        first = number if first is None else first
        last = number
        yield f"row {number}: {FIELD_SEPARATOR.join(fields)}"
    label = f"Sheet: {name}" if name else "Table"
    if first is None:
        heading = f"{label} (header only: {', '.join(header)})" if header else f"{label} (empty)"
    else:
        heading = f"{label} (rows {first}-{last}; columns: {', '.join(header or [])})"
    yield heading


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
