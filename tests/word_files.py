"""Word files with what python-docx cannot write itself: footnotes, endnotes, text boxes,
tracked changes, content controls. The XML is Word's own (ECMA-376 Part 1), added to a
python-docx document or, for the note parts, to the saved package.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from format_files import W_NAMESPACE, add_word_list, number_paragraph

_MC = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
_WPS = 'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"'
_WP = 'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"'
_A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
_V = 'xmlns:v="urn:schemas-microsoft-com:vml"'
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.{}+xml"


def _xml(text: str):
    from docx.oxml import parse_xml

    return parse_xml(text)


def add_note_reference(paragraph, kind: str, note_id: int) -> None:
    """A footnote or endnote reference run (`kind` "footnote" or "endnote") at the paragraph's end."""
    paragraph._p.append(_xml(f'<w:r {W_NAMESPACE}><w:{kind}Reference w:id="{note_id}"/></w:r>'))


def add_text_box(paragraph, text: str) -> None:
    """A floating text box anchored in the paragraph, as Word 2010 and later write it: the
    shape, then the same text again as VML for older readers (which must not be read twice)."""
    box = f"<w:txbxContent><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:txbxContent>"
    paragraph._p.append(
        _xml(
            f"<w:r {W_NAMESPACE} {_MC} {_WPS} {_WP} {_A} {_V}><mc:AlternateContent>"
            '<mc:Choice Requires="wps"><w:drawing><wp:anchor><a:graphic><a:graphicData '
            'uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">'
            f"<wps:wsp><wps:txbx>{box}</wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor>"
            "</w:drawing></mc:Choice>"
            f"<mc:Fallback><w:pict><v:shape><v:textbox>{box}</v:textbox></v:shape></w:pict></mc:Fallback>"
            "</mc:AlternateContent></w:r>"
        )
    )


def add_tracked_changes(paragraph, inserted: str, deleted: str) -> None:
    """Text inserted and text deleted with Word's change tracking on, neither accepted yet."""
    paragraph._p.append(
        _xml(f'<w:ins {W_NAMESPACE} w:id="91" w:author="Ann"><w:r><w:t>{inserted}</w:t></w:r></w:ins>')
    )
    paragraph._p.append(
        _xml(
            f'<w:del {W_NAMESPACE} w:id="92" w:author="Ann">'
            f"<w:r><w:delText>{deleted}</w:delText></w:r></w:del>"
        )
    )


def add_content_control(document, text: str) -> None:
    """A block content control (a template's filled-in field) holding one paragraph."""
    document.element.body.insert(
        0,
        _xml(
            f'<w:sdt {W_NAMESPACE}><w:sdtPr><w:alias w:val="Summary"/></w:sdtPr>'
            f"<w:sdtContent><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:sdtContent></w:sdt>"
        ),
    )


def add_numbered_cell(document, cell, items: list[str]) -> None:
    """A numbered list (1., 2., ...) as a table cell's paragraphs."""
    num_id = add_word_list(document, [("decimal", "%1.")])
    cell.paragraphs[0].text = items[0]
    number_paragraph(cell.paragraphs[0], num_id)
    for item in items[1:]:
        number_paragraph(cell.add_paragraph(item), num_id)


def _notes_part(kind: str, notes: dict[int, str]) -> str:
    """A footnotes or endnotes part: Word's two separator notes, then one note per id."""
    separators = "".join(
        f'<w:{kind} w:type="{kind_type}" w:id="{number}"><w:p><w:r><w:{kind_type}/></w:r></w:p></w:{kind}>'
        for number, kind_type in ((-1, "separator"), (0, "continuationSeparator"))
    )
    bodies = "".join(
        f'<w:{kind} w:id="{number}"><w:p><w:r><w:{kind}Ref/></w:r>'
        f'<w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{kind}>'
        for number, text in notes.items()
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><w:{kind}s {W_NAMESPACE}>{separators}{bodies}</w:{kind}s>'


def add_note_parts(path: Path, footnotes: dict[int, str], endnotes: dict[int, str]) -> None:
    """Add the footnotes and endnotes parts (note id -> text) to a saved .docx, as Word stores them."""
    parts = {"footnotes": footnotes, "endnotes": endnotes}
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    overrides = "".join(
        f'<Override PartName="/word/{kind}.xml" ContentType="{_CONTENT_TYPE.format(kind)}"/>'
        for kind in parts
    )
    members["[Content_Types].xml"] = members["[Content_Types].xml"].replace(
        b"</Types>", f"{overrides}</Types>".encode()
    )
    relationships = "".join(
        f'<Relationship Id="rIdNotes{kind}" Type="{_RELATIONSHIPS}{kind}" Target="{kind}.xml"/>'
        for kind in parts
    )
    rels = "word/_rels/document.xml.rels"
    members[rels] = members[rels].replace(b"</Relationships>", f"{relationships}</Relationships>".encode())
    members.update(
        {f"word/{kind}.xml": _notes_part(kind[:-1], notes).encode() for kind, notes in parts.items()}
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def make_annotated_docx(target: Path) -> None:
    """A harbour report with a footnote, an endnote, a comment, a text box, tracked changes, a
    content control, a numbered list and a nested table in table cells, a header and a footer."""
    import docx

    document = docx.Document()
    add_content_control(document, "Prepared for the harbour board.")
    document.add_heading("Harbour report", level=1)
    add_note_reference(document.add_paragraph("The tide tables were revised"), "footnote", 1)
    add_note_reference(document.add_paragraph("Dredging starts in May"), "endnote", 1)
    approved = document.add_paragraph("The budget was approved.")
    document.add_comment(approved.runs, text="Check the figure with finance", author="Ann", initials="A")
    add_text_box(document.add_paragraph("Safety first."), "Sidebar: lifejackets are mandatory")
    add_tracked_changes(document.add_paragraph("The ferry leaves at "), "nine", "eight")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text, table.cell(1, 0).text = "Task", "Steps", "Docking"
    add_numbered_cell(document, table.cell(1, 1), ["Moor the boat", "Tie the ropes"])
    nested = table.cell(0, 0).add_table(rows=2, cols=1)
    nested.cell(0, 0).text, nested.cell(1, 0).text = "Crew", "Pilot"
    section = document.sections[0]
    section.header.paragraphs[0].text = "Harbour board - internal"
    section.footer.paragraphs[0].text = "Port of Leith"
    document.save(str(target))
    add_note_parts(target, {1: "Source: the 1987 tide survey."}, {1: "Dates depend on the permit."})
