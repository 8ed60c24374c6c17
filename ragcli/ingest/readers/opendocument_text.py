"""The body of an OpenDocument text file (.odt) as blocks, for the ODT reader.

``content.xml`` is streamed (`ragcli.ingest.readers.containers.iter_xml`); each top-level
block (a paragraph, a heading, a list, a table) is rendered once it ends, then cleared, so
memory follows one block. A list item starts with the number or bullet its list style shows
("1. ", "b) ", "- "), indented two spaces a level, as in Word files; a table is one line per
row, cells joined by " | "; a footnote or endnote is marked where it stands ("[1]") and its
text follows its paragraph; a comment follows as "Comment by AUTHOR: ..."; the text of a text
box follows its paragraph; deleted text kept for change tracking is left out.
Reference: OASIS OpenDocument 1.3 Part 3, sections 5.3 (lists), 6.3 (notes), 14.10 (list styles).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from ragcli.ingest.readers.containers import iter_xml, local_name
from ragcli.ingest.readers.numbering import BULLET, INDENT, formatted

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_DC = "{http://purl.org/dc/elements/1.1/}"
CELL_SEPARATOR = " | "
# Top-level blocks: rendered whole once they end. Deleted text (tracked changes) is skipped.
_BLOCKS = {_TEXT + "p", _TEXT + "h", _TEXT + "list", _TABLE + "table", _TEXT + "tracked-changes"}
_NUMBER_FORMATS = {
    "1": "decimal",
    "a": "lowerLetter",
    "A": "upperLetter",
    "i": "lowerRoman",
    "I": "upperRoman",
}
_ROWS = {_TABLE + "table-header-rows", _TABLE + "table-rows", _TABLE + "table-row-group"}
_CELLS = {_TABLE + "table-cell", _TABLE + "covered-table-cell"}


@dataclass(frozen=True)
class _Level:
    """One level of a list style: a bullet, or a number format with its prefix and suffix."""

    number_format: str | None  # None: a bullet
    prefix: str = ""
    suffix: str = ""
    start: int = 1
    shown: int = 1  # text:display-levels: how many levels' numbers the marker shows ("1.2.")


def _list_style(element: Any) -> dict[int, _Level]:
    """A text:list-style's levels by number (1-10)."""
    levels = {}
    for level in element:
        number = int(level.get(_TEXT + "level", "1") or 1)
        if local_name(level.tag) == "list-level-style-number":
            levels[number] = _Level(
                _NUMBER_FORMATS.get(level.get(_STYLE + "num-format", "1"), ""),
                level.get(_STYLE + "num-prefix", ""),
                level.get(_STYLE + "num-suffix", ""),
                _integer(level.get(_TEXT + "start-value"), 1),
                _integer(level.get(_TEXT + "display-levels"), 1),
            )
        else:  # a bullet or an image
            levels[number] = _Level(None)
    return levels


def _integer(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


@dataclass
class _Lists:
    """The document's list styles and the counts of the lists met so far."""

    styles: dict[str, dict[int, _Level]] = field(default_factory=dict)

    last: dict[str, int] = field(default_factory=dict)  # style -> the count its last list ended at

    def start(self, element: Any, style: str) -> int:
        """The count a top-level list starts after: its previous list's when it continues it
        (a list interrupted by a paragraph, "Continue numbering")."""
        continues = element.get(_TEXT + "continue-numbering") == "true" or element.get(
            _TEXT + "continue-list"
        )
        return self.last.get(style, 0) if continues else 0

    def level(self, style: str, depth: int) -> _Level:
        return self.styles.get(style, {}).get(depth, _Level(None))

    def marker(self, style: str, counts: list[int]) -> str:
        """The marker of an item whose level is ``len(counts)``: its number and the numbers of
        the levels above it that its style shows ("2.1."), or a bullet."""
        depth = len(counts)
        level = self.level(style, depth)
        if level.number_format is None:
            return INDENT * (depth - 1) + BULLET + " "
        first = max(1, depth - level.shown + 1)
        numbers = [
            formatted(counts[at - 1], self.level(style, at).number_format or "decimal")
            for at in range(first, depth + 1)
        ]
        text = (
            level.prefix + ".".join(numbers) + level.suffix
            if level.number_format
            else level.prefix + level.suffix
        )
        return INDENT * (depth - 1) + text + " " if text.strip() else ""


class _Renderer:
    """Renders one top-level block into text blocks, asides after their block."""

    def __init__(self, lists: _Lists) -> None:
        self._lists = lists
        self._asides: list[str] = []

    def blocks(self, element: Any) -> list[str]:
        texts = self._block(element)
        asides, self._asides = self._asides, []
        return [text for text in [*texts, *asides] if text]

    def _block(self, element: Any) -> list[str]:
        if element.tag in (_TEXT + "p", _TEXT + "h"):
            return [self._inline(element)]
        if element.tag == _TEXT + "list":
            return self._list(element, "", [])
        if element.tag == _TABLE + "table":
            return ["\n".join(line for line in self._rows(element) if line.strip(" |"))]
        if element.tag == _TEXT + "section":
            return [text for child in element for text in self._block(child)]
        return []  # tracked changes (deleted text), sequence declarations

    def _list(self, element: Any, style: str, outer: list[int]) -> list[str]:
        """A list's items with their markers; nested lists one level deeper."""
        style = element.get(_TEXT + "style-name") or style
        counts = [*outer, 0 if outer else self._lists.start(element, style)]
        texts = []
        for item in element:
            if self._counted(item):
                start = self._lists.level(style, len(counts)).start
                counts[-1] = _integer(
                    item.get(_TEXT + "start-value"), counts[-1] + 1 if counts[-1] else start
                )
            for at, child in enumerate(item):
                if child.tag == _TEXT + "list":
                    texts.extend(self._list(child, style, counts))
                    continue
                rendered = self._block(child)
                if at == 0 and rendered and rendered[0] and self._counted(item):
                    rendered[0] = self._lists.marker(style, counts) + rendered[0]
                texts.extend(rendered)
        if not outer:
            self._lists.last[style] = counts[0]
        return texts

    @staticmethod
    def _counted(item: Any) -> bool:
        """A list item shows a number unless it is a header or holds only a deeper list."""
        first = next(iter(item), None)
        return item.tag == _TEXT + "list-item" and first is not None and first.tag != _TEXT + "list"

    def _rows(self, table: Any) -> Iterator[str]:
        for child in table:
            if child.tag in _ROWS:
                yield from self._rows(child)
            elif child.tag == _TABLE + "table-row":
                cells = [self._cell(cell) for cell in child if cell.tag in _CELLS]
                while cells and not cells[-1]:
                    cells.pop()
                yield CELL_SEPARATOR.join(cells)

    def _cell(self, cell: Any) -> str:
        return " ".join(" ".join(text for child in cell for text in self._block(child)).split())

    def _inline(self, element: Any) -> str:
        """A paragraph's text, whitespace collapsed; notes, comments and frames become asides."""
        return " ".join("".join(self._pieces(element)).split())

    def _pieces(self, element: Any) -> Iterator[str]:
        yield element.text or ""
        for child in element:
            if child.tag in (_TEXT + "s", _TEXT + "tab", _TEXT + "line-break"):
                yield " "
            elif child.tag == _TEXT + "note":
                yield self._note(child)
            elif child.tag == _OFFICE + "annotation":
                self._comment(child)
            elif child.tag == _DRAW + "frame":
                self._asides.extend(text for box in child for part in box for text in self._block(part))
            else:
                yield from self._pieces(child)
            yield child.tail or ""

    def _note(self, note: Any) -> str:
        """The note's citation ("[1]"), its text noted as an aside."""
        citation = " ".join("".join(note.findtext(_TEXT + "note-citation") or "").split())
        mark = f"[{citation}]" if citation else ""
        body = note.find(_TEXT + "note-body")
        text = " ".join(t for child in (body if body is not None else []) for t in self._block(child))
        if text:
            self._asides.append(f"{mark} {text}".strip())
        return mark

    def _comment(self, annotation: Any) -> None:
        author = " ".join((annotation.findtext(_DC + "creator") or "").split())
        text = " ".join(t for child in annotation if child.tag != _DC + "creator" for t in self._block(child))
        if text:
            self._asides.append(f"Comment by {author}: {text}" if author else f"Comment: {text}")


def read_list_styles(path: Path, stream: IO[bytes] | None) -> dict[str, dict[int, _Level]]:
    """The named list styles of ``styles.xml`` (None when the file has none)."""
    if stream is None:
        return {}
    styles = {}
    for event, element in iter_xml(path, stream):
        if event == "end" and element.tag == _TEXT + "list-style":
            styles[element.get(_STYLE + "name", "")] = _list_style(element)
    return styles


def text_blocks(path: Path, stream: IO[bytes], styles: dict[str, dict[int, _Level]]) -> Iterator[str]:
    """The blocks of content.xml's body, in order (its automatic list styles read on the way)."""
    lists = _Lists(dict(styles))
    renderer = _Renderer(lists)
    depth = 0
    for event, element in iter_xml(path, stream):
        if event == "end" and element.tag == _TEXT + "list-style":
            lists.styles[element.get(_STYLE + "name", "")] = _list_style(element)
        if element.tag not in _BLOCKS:
            continue
        depth += 1 if event == "start" else -1
        if event == "end" and depth == 0:
            yield from renderer.blocks(element)
            element.clear()
