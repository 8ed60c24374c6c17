"""A Word document's footnotes, endnotes and comments, for the DOCX reader.

Their text lives outside the body, in parts of their own (``word/footnotes.xml``,
``word/endnotes.xml``, ``word/comments.xml``); the body holds only a reference run
(``w:footnoteReference w:id="3"``) where Word shows the note's number or anchors the comment.
python-docx reads none of the note parts, so each is parsed here with its XML parser (entities
are never resolved, and the container was checked before). Reference: ECMA-376 Part 1, sections
17.11 (footnotes and endnotes) and 17.13.4 (comments).
"""

from __future__ import annotations

from typing import Any

from ragcli.ingest.readers.numbering import formatted

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
# reference element -> (relationship type of its part, note element, number format)
# Word numbers footnotes 1, 2, 3 and endnotes i, ii, iii unless a document says otherwise.
_KINDS = {
    "footnoteReference": ("footnotes", "footnote", "decimal"),
    "endnoteReference": ("endnotes", "endnote", "lowerRoman"),
    "commentReference": ("comments", "comment", ""),
}
REFERENCES = frozenset(_W + name for name in _KINDS)


def _notes(document: Any, part_name: str, element_name: str) -> dict[str, Any]:
    """The part's notes by id; {} when the document has no such part."""
    from docx.oxml import parse_xml

    for relationship in document.part.rels.values():
        if relationship.reltype == _RELATIONSHIPS + part_name and not relationship.is_external:
            root = parse_xml(relationship.target_part.blob)
            return {note.get(_W + "id"): note for note in root.iter(_W + element_name)}
    return {}


class Notes:
    """The notes and comments a document's references point at, numbered as they are met."""

    def __init__(self, document: Any) -> None:
        self._notes = {kind: _notes(document, part, element) for kind, (part, element, _) in _KINDS.items()}
        self._counts = dict.fromkeys(_KINDS, 0)

    def referenced(self, reference: Any) -> tuple[str, Any] | None:
        """``(mark, note element)`` for a reference element, counting it; None when the
        note is missing. The mark is what Word shows in the text ("[3]", "[ii]"); a comment
        has none."""
        kind = reference.tag.removeprefix(_W)
        note = self._notes[kind].get(reference.get(_W + "id"))
        if note is None:
            return None
        *_, number_format = _KINDS[kind]
        if not number_format:
            return "", note
        self._counts[kind] += 1
        return f"[{formatted(self._counts[kind], number_format)}]", note

    @staticmethod
    def label(mark: str, note: Any) -> str:
        """What starts a note's own block: its mark, or "Comment by AUTHOR:" for a comment."""
        if mark:
            return mark
        author = (note.get(_W + "author") or "").strip()
        return f"Comment by {author}:" if author else "Comment:"
