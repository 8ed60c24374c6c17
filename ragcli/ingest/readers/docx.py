"""Word documents (.docx), read with python-docx.

Paragraphs and tables are read in body order, because a table usually belongs to the
paragraph that introduces it. Each table row becomes one line, its cells joined by
" | ". A list item starts with its marker as Word shows it ("1. ", "a) ", "- "), indented two
spaces a level (`ragcli.ingest.readers.numbering`), so an answer can tell where a list ends;
in a table cell too. What Word shows beside the text (a text box, a footnote, an endnote, a
comment) follows the paragraph or table it belongs to (`ragcli.ingest.readers.docx_notes`);
headers and footers come last, each once. python-docx is imported when a file is read, not
at start-up.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterator

from ragcli.ingest.readers.base import read_bytes, build_document, reader_error
from ragcli.ingest.readers.containers import check_container
from ragcli.ingest.readers.docx_notes import REFERENCES, Notes
from ragcli.ingest.readers.numbering import ListMarkers, ParagraphStyles
from ragcli.types import Document

CELL_SEPARATOR = " | "
_TITLE_STYLES = ("Title", "Heading 1")
# Headings keep their text alone: a numbered heading ("1. Scope") read as a list item would
# no longer start a section.
_HEADING_STYLE = re.compile(r"Title|Subtitle|Heading \d")
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
# Run content with a text equivalent (python-docx's Run.text: a tab, a line break, the text)
_RUN_TEXT = frozenset(_W + name for name in ("t", "tab", "ptab", "br", "cr", "noBreakHyphen"))
# Elements around body paragraphs and tables: a content control (its properties hold no text)
_BLOCK_WRAPPERS = frozenset(_W + name for name in ("sdt", "sdtContent", "customXml"))
# Text Word does not show in the document: deleted, moved away, or the older markup that a
# newer one (mc:Choice) replaces; and the properties of runs and paragraphs.
_HIDDEN = frozenset((_W + "del", _W + "moveFrom", _MC + "Fallback", _W + "rPr", _W + "pPr"))


class _WordText:
    """A document's text as Word shows it, block by block.

    Paragraph text includes what python-docx leaves out: tracked insertions, content
    controls, field results, and a note's number where its reference stands ("[1]"). What
    Word shows beside the text flow (a text box, a footnote or endnote, a comment) is an
    aside: it is written as a block of its own right after the body block it belongs to, so
    a chunk holding a sentence holds its footnote too.
    """

    def __init__(self, document: Any) -> None:
        self._parent = document._body  # python-docx's Paragraph and Table need it for styles
        self._styles = ParagraphStyles(document)
        self._markers = ListMarkers(document, self._styles)
        self._notes = Notes(document)
        self._asides: list[str] = []

    def body(self, container: Any) -> Iterator[str]:
        """The non-empty blocks under `container` (the body, a header), each followed by its
        asides, in order."""
        for text in self._blocks(container):
            asides, self._asides = self._asides, []
            yield from (block for block in [text, *asides] if block)

    def _blocks(self, container: Any) -> Iterator[str]:
        """Each paragraph's and table's text; content controls and custom XML opened."""
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        for element in container:
            if element.tag == _W + "p":
                yield self._paragraph(Paragraph(element, self._parent))
            elif element.tag == _W + "tbl":
                yield self._table(Table(element, self._parent))
            elif element.tag in _BLOCK_WRAPPERS:
                yield from self._blocks(element)

    def _paragraph(self, paragraph: Any) -> str:
        """A paragraph's text, a list item's after its marker; "" for an empty paragraph."""
        style = self._styles.name(paragraph)
        marker = "" if _HEADING_STYLE.fullmatch(style) else self._markers.marker(paragraph)
        text = "".join(self._inline(paragraph._p)).strip()
        return marker + text if text else ""

    def _inline(self, element: Any) -> Iterator[str]:
        """The text of a paragraph's runs in order; text boxes and notes met become asides."""
        for child in element:
            if child.tag in _RUN_TEXT:
                yield str(child)  # python-docx's text equivalent (a page break is "")
            elif child.tag in REFERENCES:
                yield self._note(child)
            elif child.tag == _W + "txbxContent":
                self._aside(lambda box=child: " ".join(self._blocks(box)))
            elif child.tag not in _HIDDEN:
                yield from self._inline(child)  # runs, hyperlinks, insertions, fields, drawings

    def _note(self, reference: Any) -> str:
        """The mark a note's reference shows, its text noted as an aside."""
        referenced = self._notes.referenced(reference)
        if referenced is None:
            return ""
        mark, note = referenced

        def render() -> str:
            text = " ".join(self._blocks(note)).strip()
            return f"{Notes.label(mark, note)} {text}" if text else ""

        self._aside(render)
        return mark

    def _aside(self, render: Callable[[], str]) -> None:
        """Keep the aside's place before rendering it: asides inside it (a footnote in a text
        box) come after it."""
        at = len(self._asides)
        self._asides.append("")
        self._asides[at] = render().strip()

    def _table(self, table: Any) -> str:
        """A table as one line per row."""
        rows = (self._row(row) for row in table.rows)
        return "\n".join(line for line in rows if line.strip(" |"))

    def _row(self, row: Any) -> str:
        """Join a row's cells; a merged cell is listed once, not once per grid column."""
        seen: set[int] = set()
        texts: list[str] = []
        for cell in row.cells:
            # python-docx repeats a horizontally merged cell for every column it spans;
            # the underlying <w:tc> element is the same object each time.
            if id(cell._tc) not in seen:
                seen.add(id(cell._tc))
                # a table inside the cell keeps its rows apart
                blocks = (block.replace("\n", "; ") for block in self._blocks(cell._tc))
                texts.append(" ".join(" ".join(blocks).split()))
        return CELL_SEPARATOR.join(texts)


def _headers_and_footers(document: Any) -> Iterator[Any]:
    """Every header and footer a section defines (not inherits), first page and even pages too."""
    for section in document.sections:
        for name in ("header", "first_page_header", "even_page_header"):
            for part in (getattr(section, name), getattr(section, name.replace("header", "footer"))):
                if not part.is_linked_to_previous:
                    yield part._element


def _blocks(document: Any) -> list[str]:
    """The body's blocks in order, then each distinct header and footer line once.

    A header or footer is printed on every page, but its text is the document's once: repeated,
    it would fill every chunk with the same words.
    """
    text = _WordText(document)
    blocks = list(text.body(document.element.body))
    seen = set(blocks)
    for element in _headers_and_footers(document):
        for block in text.body(element):
            if block not in seen:
                seen.add(block)
                blocks.append(block)
    return blocks


def _title(document: Any) -> str | None:
    """Return the core-properties title, else the first Title or Heading 1 paragraph."""
    if document.core_properties.title:
        return document.core_properties.title
    styles = ParagraphStyles(document)
    for paragraph in document.paragraphs:
        if styles.name(paragraph) in _TITLE_STYLES and paragraph.text.strip():
            return paragraph.text
    return None


class DocxReader:
    """Reads the body text and tables of Word .docx files."""

    suffixes: tuple[str, ...] = (".docx",)
    file_type = "docx"
    # 2: list items start with their number or bullet
    # 3: footnotes, endnotes, comments, text boxes, headers and footers, tracked insertions,
    #    content controls, fields, nested tables and list numbers in table cells are read
    version = "3"

    def read(self, path: Path) -> Document:
        """Read a .docx file into a Document; blocks are separated by blank lines.

        Raises:
            ReaderError: The file is unreadable or not a valid .docx package.
        """
        import docx
        from docx.opc.exceptions import PackageNotFoundError

        # Limits and entity declarations first: python-docx would inflate every part in memory.
        check_container(path, "DOCX", "re-save it from Word as .docx")
        try:
            document = docx.Document(io.BytesIO(read_bytes(path)))  # regular files only
            blocks, title = _blocks(document), _title(document)
        except (
            PackageNotFoundError,
            zipfile.BadZipFile,
            KeyError,
            ValueError,
            SyntaxError,
        ) as exc:
            # lxml's XMLSyntaxError is a SyntaxError; legacy .doc files land here too.
            detail = "not a Word zip package" if isinstance(exc, PackageNotFoundError) else exc
            reason = f"not a valid DOCX file ({detail or type(exc).__name__}); re-save it from Word as .docx"
            raise reader_error(path, reason) from exc
        except OSError as exc:
            raise reader_error(path, f"cannot read file ({exc.strerror or exc})") from exc
        return build_document(path, "\n\n".join(blocks), self.file_type, title=title)
