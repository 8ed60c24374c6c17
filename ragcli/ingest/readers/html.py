"""HTML pages (.html, .htm), read with selectolax's Lexbor parser.

Only visible prose is kept: scripts, styles, navigation and hidden elements are dropped.
Block elements (p, div, h1, li ...) become paragraphs separated by a blank line, so the
passage splitter sees the page's structure; table cells are joined by " | " as in DOCX.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ragcli.ingest.readers.base import build_document, reader_error
from ragcli.ingest.readers.text import read_text_file
from ragcli.types import Document

# Elements whose content is never shown as page text, or is site chrome repeated on
# every page (nav), which would make every page match navigation words.
_NOISE_TAGS = "head script style noscript template nav svg iframe object".split()
_HIDDEN = "[hidden], [aria-hidden='true']"
_BLOCK_TAGS = frozenset(
    "address article aside blockquote caption dd details dialog div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main ol p pre "
    "section summary table tbody thead tfoot ul".split()
)
# A table row is one line, as in the DOCX reader, not a paragraph of its own.
_ROW_TAGS = frozenset({"tr"})
_CELL_TAGS = frozenset({"td", "th"})
# Markers used while walking; neither survives whitespace collapsing of real text.
_BREAK, _CELL = "\n\n", "\t"
_SPACES = re.compile(r"\s+")

# The parser's tree building costs time in proportion to the depth for each element nested in
# block elements (40,000 nested divs: 2.3 s of CPU, 200,000: minutes), so tags deeper than this
# are dropped before parsing (their text stays); no real page nests this deep.
MAX_DEPTH = 256
# Each element costs the parsed tree about 150 bytes with its text: this bounds its memory
# (about 150 MB) far above real pages (a long single-page specification holds ~300,000).
MAX_ELEMENTS = 1_000_000
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*>")
_VOID_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr".split())


class TooManyElements(ValueError):
    """An HTML page holds more elements than `MAX_ELEMENTS`."""


def bounded_markup(html: str) -> str:
    """`html` with the tags nested deeper than `MAX_DEPTH` removed (one linear pass).

    Raises:
        TooManyElements: the page opens more than `MAX_ELEMENTS` elements.
    """
    depth = opened = 0
    dropped: list[tuple[int, int]] = []
    for match in _TAG.finditer(html):
        closing, name = match.group(1), match.group(2).lower()
        if name in _VOID_TAGS or match.group().endswith("/>"):
            continue
        if closing:
            if depth > MAX_DEPTH:
                dropped.append(match.span())
            depth = max(depth - 1, 0)
            continue
        opened += 1
        if opened > MAX_ELEMENTS:
            raise TooManyElements(f"more than {MAX_ELEMENTS:,} elements")
        depth += 1
        if depth > MAX_DEPTH:
            dropped.append(match.span())
    if not dropped:
        return html
    kept, start = [], 0
    for begin, end in dropped:
        kept.append(html[start:begin])
        start = end
    kept.append(html[start:])
    return "".join(kept)


def _markers(tag: str) -> tuple[str, str]:
    """Return the (before, after) markers an element adds around its content."""
    if tag in _BLOCK_TAGS:
        return _BREAK, _BREAK
    if tag in _ROW_TAGS:
        return "", "\n"
    if tag in _CELL_TAGS:
        return _CELL, ""
    return ("\n", "") if tag == "br" else ("", "")


def _walk(root: Any) -> str:
    """Flatten the element tree to text plus break and cell markers.

    Iterative rather than recursive, so deeply nested pages cannot hit the recursion
    limit; a plain string on the stack is the marker that closes an element.
    """
    parts: list[str] = []
    stack: list[Any] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif item.tag == "-text":
            parts.append(_SPACES.sub(" ", item.text(deep=False)))
        elif item.tag == "pre":
            # Preformatted text keeps its line breaks; tabs would read as cell markers.
            parts.append(_BREAK + item.text().replace(_CELL, " ") + _BREAK)
        else:
            before, after = _markers(item.tag)
            parts.append(before)
            stack.append(after)
            stack.extend(reversed(list(item.iter(include_text=True))))
    return "".join(parts)


def _tidy(raw: str) -> str:
    """Trim each line, join table cells with " | " and keep at most one blank line."""
    lines = []
    for line in raw.split("\n"):
        cells = (_SPACES.sub(" ", cell).strip() for cell in line.split(_CELL))
        lines.append(" | ".join(cell for cell in cells if cell))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


_PAGE_TITLE = ("title", "h1")
# A chapter of a book: its own first heading names it; its <title> is often the book's title,
# repeated in every chapter file, or a bare "Chapter 3".
_CHAPTER_TITLE = ("h1, h2, h3", "title")


def _title(tree: Any, selectors: tuple[str, ...]) -> str | None:
    """Return the text of the first of `selectors` that matches with text."""
    for selector in selectors:
        node = tree.css_first(selector)
        if node is not None and node.text(strip=True):
            return node.text(strip=True)
    return None


# The page's main-content landmark (HTML's <main>, or ARIA's role="main" in older themes).
_MAIN = "main, [role='main']"


def _main_content(tree: Any) -> Any | None:
    """The page's one main-content element with text, or None where it has none or several.

    Generated documentation (mdBook, Sphinx and MkDocs themes, Docusaurus) wraps each page in
    site chrome that is hidden or drawn by CSS and script rather than by markup: a keyboard-help
    popup, a theme menu, the book's name as a heading. Read as text, that chrome leads every page
    and is quoted as if it were content. The landmark marks what the page is about, so when a
    page has exactly one (a landmark nested in another counts once), the rest is left out.
    """
    landmarks = tree.css(_MAIN)
    outermost = [node for node in landmarks if not any(_inside(node, other) for other in landmarks)]
    if len(outermost) != 1 or not outermost[0].text(strip=True):
        return None
    return outermost[0]


# A link to a place on its own page; with no word of its own it is a permalink marker.
_SAME_PAGE_LINK = "a[href^='#']"


def _is_permalink(node: Any) -> bool:
    """Whether a same-page link is a heading's or an entry's permalink: a sign ("¶", "#", "§",
    "🔗") or nothing, which Sphinx, MkDocs, Docusaurus and GitHub add after every heading and API
    entry for readers to copy. Read as text, it is glued to the heading ("Argument Passing¶")
    and quoted with it; a link holding a letter or a digit (a footnote's number) is kept."""
    return not any(char.isalnum() for char in node.text())


def _inside(node: Any, other: Any) -> bool:
    """Whether `node` is a descendant of `other`."""
    parent = node.parent
    while parent is not None:
        if parent == other:
            return True
        parent = parent.parent
    return False


def extract_html(html: str, *, chapter: bool = False) -> tuple[str, str | None]:
    """Return the visible text of an HTML page and its title.

    Args:
        html: The page source.
        chapter: the page is a book's chapter: its title is its first heading (h1-h3), else
            its <title>; a web page's title is its <title>, else its first h1.

    Returns:
        ``(text, title)``; paragraphs in ``text`` are separated by blank lines.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(bounded_markup(html))
    title = _title(tree, _CHAPTER_TITLE if chapter else _PAGE_TITLE)
    tree.strip_tags(_NOISE_TAGS)
    for node in tree.css(_HIDDEN):
        node.decompose()
    for node in tree.css(_SAME_PAGE_LINK):
        if _is_permalink(node):
            node.decompose()
    root = _main_content(tree) or (tree.body if tree.body is not None else tree.root)
    return (_tidy(_walk(root)) if root is not None else ""), title


class HtmlReader:
    """Reads the visible text of HTML pages."""

    suffixes: tuple[str, ...] = (".html", ".htm")
    file_type = "html"
    # 2: a page with one main-content landmark is read from it alone; 3: permalink signs left out
    version = "3"

    def read(self, path: Path) -> Document:
        """Read an HTML file (UTF-8, or UTF-16 with a BOM) into a Document.

        Raises:
            ReaderError: The file cannot be read, is not valid Unicode text, or holds more
                elements than `MAX_ELEMENTS` (the limit is named).
        """
        try:
            text, title = extract_html(read_text_file(path))
        except TooManyElements as error:
            raise reader_error(path, f"too large a page to read: {error} (the limit)") from error
        return build_document(path, text, self.file_type, title=title)
