"""Where in a document a hit or a citation points, in the document's own unit.

A page of a stored document is what its reader made a page: a PDF page, a slide, a sheet, an
e-book chapter (`ragcli.ingest.readers`). ``deck.pptx:3`` is what `rag get` and `rag open`
take; people read "slide 3". Spreadsheet rows are written ``row N: ...`` by their readers, so the
rows a piece of text holds are read back from it.
"""

from __future__ import annotations

import re
from ragcli.text import PAGE_BREAK


# The unit one page of a file is, by suffix; any other paged file (a PDF) has pages.
PAGE_UNITS = {
    ".pptx": "slide",
    ".odp": "slide",
    ".xlsx": "sheet",
    ".xlsm": "sheet",
    ".ods": "sheet",
    ".epub": "chapter",
}
# Files whose readers write one ``row N: ...`` line per record (`ragcli.ingest.readers.records`).
ROW_SUFFIXES = (".xlsx", ".xlsm", ".ods", ".csv", ".tsv")
_ROW = re.compile(r'(?:^|\s|")row (\d+): ')


def page_unit(path: str) -> str:
    """``slide``, ``sheet``, ``chapter`` or ``page``: what one page of `path` is."""
    dot = path.rfind(".")
    return PAGE_UNITS.get(path[dot:].lower(), "page") if dot >= 0 else "page"


def row_range(path: str, text: str) -> str | None:
    """``rows 7-12`` (or ``row 7``) for the spreadsheet rows `text` holds, else None."""
    if not path.lower().endswith(ROW_SUFFIXES):
        return None
    rows = [int(number) for number in _ROW.findall(text)]
    if not rows:
        return None
    low, high = min(rows), max(rows)
    return f"row {low}" if low == high else f"rows {low}-{high}"


def place(path: str, page: int | None, text: str = "") -> str | None:
    """The place in words: ``slide 3``, ``sheet 2, rows 7-12``, ``chapters 4-5``, ``rows 2-9``,
    ``pages 3-5``.

    `text` is what is cited there (a chunk, quoted lines); a text that runs over page breaks
    spans several pages. None where the ``path:page`` form already says it all: one PDF page,
    or a file without pages or rows (a hit running over PDF pages 3-5 says so: ``:3`` alone
    points at its first page only).
    """
    rows = row_range(path, text)
    unit = page_unit(path)
    if page is None:
        return rows
    first, last = _page_span(unit, page, text)
    if unit == "page" and first == last:
        return rows
    where = f"{unit} {first}" if first == last else f"{unit}s {first}-{last}"
    return f"{where}, {rows}" if rows else where


def _page_span(unit: str, page: int, text: str) -> tuple[int, int]:
    """The first and last page `text` covers: its page breaks, and the ``Slide N:`` or
    ``Chapter N:`` line a slide or chapter page starts with (quoted text has no page breaks).

    A page break belongs to the page it closes (`ragcli.ingest.splitting.page_at`), so breaks
    with nothing but whitespace after them, as at the end of a one-slide chunk, start no page.
    """
    pages = [page, page + text.rstrip().count(PAGE_BREAK)]
    if unit in ("slide", "chapter"):
        pages += [int(n) for n in re.findall(rf"(?:^|\s|\"){unit.title()} (\d+): ", text)]
    return min(pages), max(pages)


def location(path: str, page: int | None) -> str:
    """``PATH:PAGE``, the form `rag get` and `rag open` take; PATH for an unpaged file."""
    return f"{path}:{page}" if page is not None else path


def cited_place(path: str, page: int | None, text: str = "") -> str:
    """``deck.pptx:3 (slide 3)``: the ``path:page`` form `rag get` takes, and the place in words."""
    where = location(path, page)
    words = place(path, page, text)
    return f"{where} ({words})" if words else where
