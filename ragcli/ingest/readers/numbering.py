"""The list marker Word shows before a paragraph ("1. ", "b) ", "- "), for the DOCX reader.

A paragraph is a list item when it has numbering properties (``w:numPr``), its own or its
paragraph style's: a numbering instance (the numId) and a level (the ilvl). The instance
points at an abstract definition in the numbering part whose level gives the number format
(decimal, letters, roman numerals, bullet) and the marker text ("%1.", "%1.%2."). Word counts
per abstract definition: another instance of it continues the count unless it overrides the
level's start (``w:startOverride``, Word's "Restart at 1"), and an item restarts every deeper
level. Reference: ECMA-376 Part 1, section 17.9 (Numbering).
"""

from __future__ import annotations

import functools
import re
from typing import Any

BULLET = "-"  # whatever symbol the document shows
INDENT = "  "  # per list level
_MAX_LEVEL = 8  # Word's levels are 0-8
_STYLE_DEPTH = 10  # base styles followed, a guard against a cycle
# A list style carrying no numbering (python-docx and some templates): a bullet.
_LIST_STYLE = re.compile(r"List (?:Bullet|Number)(?: ([2-9]))?")
_NAMESPACES = {"w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main"}
_PLACEHOLDER = re.compile(r"%([1-9])")
_ROMAN = (
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
)


def _integer(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


@functools.lru_cache(maxsize=64)
def _xpath(path: str) -> Any:
    from lxml import etree  # python-docx's parser; imported with it, when a file is read

    return etree.XPath(path, namespaces=_NAMESPACES)


def _found(element: Any, path: str, **values: str | int | None) -> list[Any]:
    """`path`'s matches under `element`; `values` are bound to its `$name` variables, never
    spliced into it (they come from the document)."""
    if element is None:
        return []
    # lxml's own XPath: python-docx's namespace-aware `xpath` exists only on the elements it models
    return _xpath(path)(element, **{name: str(value) for name, value in values.items()})


def _first(element: Any, path: str, **values: str | int | None) -> Any:
    found = _found(element, path, **values)
    return found[0] if found else None


def _roman(number: int) -> str:
    """`number` in lower-case roman numerals."""
    digits = []
    for value, numeral in _ROMAN:
        count, number = divmod(number, value)
        digits.append(numeral * count)
    return "".join(digits)


def formatted(number: int, number_format: str) -> str:
    """`number` as a level of format `number_format` (``w:numFmt``) shows it; decimal for
    formats other than letters and roman numerals."""
    if number < 1:
        return str(number)
    if number_format in ("lowerLetter", "upperLetter"):
        letters = chr(ord("a") + (number - 1) % 26) * ((number - 1) // 26 + 1)  # z, aa, bb
        return letters.upper() if number_format == "upperLetter" else letters
    if number_format in ("lowerRoman", "upperRoman"):
        roman = _roman(number)
        return roman.upper() if number_format == "upperRoman" else roman
    if number_format == "decimalZero":
        return f"{number:02d}"
    return str(number)


class ParagraphStyles:
    """A document's paragraph styles, each looked up once.

    python-docx looks a paragraph's style up anew on every ``paragraph.style``, and a paragraph
    without one costs a scan of every style for the default: a Word file of 20,000 paragraphs
    took minutes to read.
    """

    def __init__(self, document: Any) -> None:
        self._part = document.part
        self._chains: dict[str | None, list[Any]] = {}

    def chain(self, paragraph: Any) -> list[Any]:
        """The paragraph's style and the styles it is based on, nearest first."""
        style_id = paragraph._p.style
        if style_id not in self._chains:
            from docx.enum.style import WD_STYLE_TYPE

            chain, style = [], self._part.get_style(style_id, WD_STYLE_TYPE.PARAGRAPH)
            while style is not None and len(chain) < _STYLE_DEPTH:
                chain.append(style)
                style = style.base_style
            self._chains[style_id] = chain
        return self._chains[style_id]

    def name(self, paragraph: Any) -> str:
        """The name of the paragraph's style; "" for none."""
        chain = self.chain(paragraph)
        return (chain[0].name or "") if chain else ""


def _numbering_element(document: Any) -> Any:
    """The numbering part's root element; None when the document has none."""
    try:
        return document.part.numbering_part.element
    except (KeyError, NotImplementedError):  # python-docx cannot create one
        return None


class ListMarkers:
    """Gives a document's paragraphs their list markers, counting them in body order."""

    def __init__(self, document: Any, styles: ParagraphStyles | None = None) -> None:
        self._paragraph_styles = styles or ParagraphStyles(document)
        self._numbering = _numbering_element(document)
        self._styles = document.styles.element
        self._counts: dict[str, dict[int, int]] = {}  # abstract definition -> level -> count
        self._restarts: dict[tuple[str, int], int] = {}  # a start override not used yet
        self._seen: set[str] = set()  # instances whose start overrides are read

    def marker(self, paragraph: Any) -> str:
        """The indentation and marker to write before `paragraph`'s text; "" for none.

        Call it for every paragraph in body order: a numbered one is counted.
        """
        chain = self._paragraph_styles.chain(paragraph)
        num_id, level = self._numbering_of(paragraph, chain)
        if num_id == "0":  # numbering switched off on the paragraph
            return ""
        # "List Number 2" is the template's second level, though a list of its own to Word
        matches = (_LIST_STYLE.fullmatch(style.name or "") for style in chain)
        style_level = next((_integer(m.group(1), 1) - 1 for m in matches if m), None)
        numbered = self._numbered(num_id, level, chain) if num_id is not None else None
        if numbered is not None:
            level, text = numbered
        elif style_level is not None:
            level, text = 0, BULLET
        else:
            return ""
        return INDENT * max(level, style_level or 0) + text + " " if text.strip() else ""

    @staticmethod
    def _numbering_of(paragraph: Any, chain: list[Any]) -> tuple[str | None, int | None]:
        """The numId and ilvl of the paragraph's own numbering properties, else its styles'."""
        num_id = level = None
        for element in [paragraph._p] + [style.element for style in chain]:
            properties = _first(element, "./w:pPr/w:numPr")
            if properties is None:
                continue
            if num_id is None:
                num_id = _first(properties, "./w:numId/@w:val")
            if level is None:
                level = _first(properties, "./w:ilvl/@w:val")
        return num_id, None if level is None else min(max(_integer(level, 0), 0), _MAX_LEVEL)

    def _numbered(self, num_id: str, level: int | None, chain: list[Any]) -> tuple[int, str] | None:
        """The level and marker of an item of instance `num_id`, counting it; None when the
        numbering part lacks the instance or its level."""
        num = _first(self._numbering, "./w:num[@w:numId=$id]", id=num_id)
        abstract_id = _first(num, "./w:abstractNumId/@w:val")
        abstract = self._abstract(abstract_id)
        if abstract is None:
            return None
        if level is None:  # numbering from a style: the level naming that style
            style_ids = [style.style_id for style in chain]
            found = [_first(abstract, "./w:lvl[w:pStyle/@w:val=$id]/@w:ilvl", id=i) for i in style_ids]
            level = _integer(next((f for f in found if f is not None), None), 0)
        self._read_restarts(num_id, num, abstract_id)
        levels = [self._level(num, abstract, i) for i in range(level + 1)]
        if levels[level] is None:
            return None
        counts = self._counts.setdefault(abstract_id, {})
        start, number_format, _ = levels[level]
        restart = self._restarts.pop((abstract_id, level), None)
        counts[level] = restart if restart is not None else counts.get(level, start - 1) + 1
        for deeper in [at for at in counts if at > level]:
            del counts[deeper]
        if number_format == "bullet":
            return level, BULLET
        return level, self._marker_text(levels, counts)

    def _read_restarts(self, num_id: str, num: Any, abstract_id: str) -> None:
        """Note the start overrides of an instance met for the first time: its first item at
        that level starts the count again (the instance is a restarted list)."""
        if num_id in self._seen:
            return
        self._seen.add(num_id)
        for override in _found(num, "./w:lvlOverride[w:startOverride]"):
            at = _integer(_first(override, "./@w:ilvl"), 0)
            self._restarts[(abstract_id, at)] = _integer(_first(override, "./w:startOverride/@w:val"), 1)

    def _abstract(self, abstract_id: str | None) -> Any:
        """The abstract definition, followed through a numbering style's link once."""
        abstract = _first(self._numbering, "./w:abstractNum[@w:abstractNumId=$id]", id=abstract_id)
        link = _first(abstract, "./w:numStyleLink/@w:val")
        if link is None:
            return abstract
        num_id = _first(self._styles, "./w:style[@w:styleId=$id]/w:pPr/w:numPr/w:numId/@w:val", id=link)
        linked = _first(self._numbering, "./w:num[@w:numId=$id]/w:abstractNumId/@w:val", id=num_id)
        return _first(self._numbering, "./w:abstractNum[@w:abstractNumId=$id]", id=linked)

    @staticmethod
    def _level(num: Any, abstract: Any, level: int) -> tuple[int, str, str] | None:
        """A level's start, number format and marker text ("%1."); the instance's override wins."""
        definition = _first(num, "./w:lvlOverride[@w:ilvl=$at]/w:lvl", at=level)
        if definition is None:
            definition = _first(abstract, "./w:lvl[@w:ilvl=$at]", at=level)
        if definition is None:
            return None
        number_format = _first(definition, "./w:numFmt/@w:val") or "decimal"
        start = _integer(_first(definition, "./w:start/@w:val"), 1)
        return start, number_format, _first(definition, "./w:lvlText/@w:val") or ""

    @staticmethod
    def _marker_text(levels: list[tuple[int, str, str] | None], counts: dict[int, int]) -> str:
        """The level's marker text with each %N replaced by level N's number."""
        *_, text = levels[-1]

        def number(match: re.Match) -> str:
            at = int(match.group(1)) - 1
            if at >= len(levels) or levels[at] is None:
                return ""
            start, number_format, _ = levels[at]
            return formatted(counts.get(at, start), number_format)

        return _PLACEHOLDER.sub(number, text)
