"""PowerPoint decks (.pptx), read with python-pptx; legacy .ppt gets a one-line "convert" error.

python-pptx (MIT) is the maintained pure-Python reader of the Office Open XML presentation
format. Each slide is one page (pages are separated by ``\\f``, so page N is slide N): a
``Slide N: title`` line, then the text of every shape in reading order (tables one row per
line, cells joined by " | ", group shapes opened, a chart by its title), then the speaker notes.
No maintained pure-Python reader exists for the binary .ppt format, so a .ppt is refused
with the command that converts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragcli.ingest.readers.base import build_document, reader_error
from ragcli.ingest.readers.containers import opened_container
from ragcli.types import Document
from ragcli.text import PAGE_BREAK

CELL_SEPARATOR = " | "
_KIND, _HINT = "PowerPoint .pptx", "re-save it from a presentation program as .pptx"


def _table_lines(table: Any) -> Iterator[str]:
    """One line per row; a merged cell is listed once, not again (empty) for each cell it covers."""
    for row in table.rows:
        cells = [" ".join(cell.text.split()) for cell in row.cells if not cell.is_spanned]
        if any(cells):
            yield CELL_SEPARATOR.join(cells)


def _chart_title(chart: Any) -> str:
    """A chart's title, "" for none (its data stays with the chart; the title says what it shows)."""
    if not chart.has_title or not chart.chart_title.has_text_frame:
        return ""
    return " ".join(chart.chart_title.text_frame.text.split())


def _shape_texts(shapes: Any, title_shape: Any) -> Iterator[str]:
    """Text of each shape but the title, groups opened, in the deck's order."""
    for shape in shapes:
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        if shape.shape_type is not None and int(shape.shape_type) == 6:  # MSO_SHAPE_TYPE.GROUP
            yield from _shape_texts(shape.shapes, None)
        elif getattr(shape, "has_table", False) and shape.has_table:
            yield "\n".join(_table_lines(shape.table))
        elif getattr(shape, "has_chart", False) and shape.has_chart:
            yield _chart_title(shape.chart)
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            yield shape.text_frame.text.strip()


def slide_page(number: int, slide: Any) -> str:
    """One slide as text: heading line, body, tables, then "Notes: ..."."""
    title_shape = slide.shapes.title
    title = (
        " ".join(title_shape.text.split()) if title_shape is not None and title_shape.has_text_frame else ""
    )
    parts = [f"Slide {number}: {title}" if title else f"Slide {number}"]
    parts.extend(text for text in _shape_texts(slide.shapes, title_shape) if text)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            parts.append("Notes: " + notes.text.strip())
    return "\n\n".join(parts)


class SlidesReader:
    """Reads PowerPoint .pptx decks, one page per slide."""

    suffixes: tuple[str, ...] = (".pptx",)
    file_type = "pptx"
    version = "2"  # 2: a merged table cell is listed once; chart titles are read

    def read(self, path: Path) -> Document:
        """Read a deck into a Document with ``slides`` in its metadata.

        Raises:
            ReaderError: not a .pptx, password-protected, corrupt or over the container limits.
        """
        import pptx
        from pptx.exc import PackageNotFoundError

        invalid = (PackageNotFoundError, KeyError, ValueError, TypeError, AttributeError, SyntaxError)
        with opened_container(path, _KIND, _HINT, invalid) as archive:
            deck = pptx.Presentation(archive.fp)
            pages = [slide_page(n, slide) for n, slide in enumerate(deck.slides, 1)]
            title = deck.core_properties.title
        if not title and pages:
            title = pages[0].split("\n", 1)[0].partition(": ")[2] or None
        return build_document(
            path, PAGE_BREAK.join(pages), self.file_type, title=title, pages=len(pages), slides=len(pages)
        )


class LegacySlidesReader:
    """Binary PowerPoint (.ppt): refused with the conversion command."""

    suffixes: tuple[str, ...] = (".ppt",)
    file_type = "ppt"
    version = "1"

    def read(self, path: Path) -> Document:
        """Raises: ReaderError: always, naming the conversion to .pptx."""
        raise reader_error(
            path,
            "legacy PowerPoint .ppt is not read; convert it to .pptx, e.g. "
            "`libreoffice --headless --convert-to pptx FILE.ppt`",
        )
