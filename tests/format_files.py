"""Small files of every format ragcli reads, built with the writing libraries or by hand.

Used by tests/test_formats.py, tests/test_readers.py, tests/test_format_answers.py,
tests/test_hostile_containers.py and benchmarks/bench_formats.py.
"""

from __future__ import annotations

import zipfile
from email.message import EmailMessage
from pathlib import Path


def make_pptx(target: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly harbour review"
    first.placeholders[1].text = "Tugboat schedules were reorganised"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Cargo volumes"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1)).table
    for (row, col), text in {
        (0, 0): "Port",
        (0, 1): "Tonnes",
        (1, 0): "Rotterdam",
        (1, 1): "marmalade",
    }.items():
        table.cell(row, col).text = text
    second.notes_slide.notes_text_frame.text = "Mention the zeppelin anecdote"
    deck.save(target)


def make_text_pdf(target: Path, pages: list[list[str]]) -> None:
    """A PDF with a text layer, written by hand: one line of Helvetica per string, top down."""
    objects = [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>", b""]
    kids = []
    for lines in pages:
        escaped = (line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines)
        ops = "\n".join(f"BT /F1 11 Tf 60 {780 - 20 * n} Td ({line}) Tj ET" for n, line in enumerate(escaped))
        stream = ops.encode("cp1252")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents %d 0 R "
            b"/Resources << /Font << /F1 1 0 R >> >> >>" % (len(objects))
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    body, offsets = b"%PDF-1.4\n", []
    for number, content in enumerate(objects, 1):
        offsets.append(len(body))
        body += b"%d 0 obj\n%s\nendobj\n" % (number, content)
    xref = b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    body += b"xref\n0 %d\n0000000000 65535 f \n%s" % (len(objects) + 1, xref)
    trailer = b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
    target.write_bytes(body + trailer % (len(objects) + 1, len(objects), body.index(b"xref")))


W_NAMESPACE = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
EXPENSE_STEPS = (
    "Open the claim form in the finance portal.",
    "Attach a scanned receipt for every item.",
    "Ask your manager to approve the claim.",
    "Submit the form before the last day of the month.",
)


def add_word_list(document, levels: list[tuple[str, str]], restart: bool = False) -> str:
    """A numbering definition added to a python-docx document, one ``(numFmt, lvlText)`` per
    level ("decimal", "%1."); returns the numId that numbers a paragraph with it. With
    `restart`, a second instance of the last definition, restarting at 1, as Word's
    "Restart at 1" writes it."""
    from docx.oxml import parse_xml

    numbering = document.part.numbering_part.element
    ids = [int(n) for n in numbering.xpath("./w:abstractNum/@w:abstractNumId")]
    if restart:
        abstract_id = max(ids)
    else:
        abstract_id = max(ids, default=-1) + 1
        lvls = "".join(
            f'<w:lvl w:ilvl="{level}"><w:start w:val="1"/><w:numFmt w:val="{number_format}"/>'
            f'<w:lvlText w:val="{text}"/></w:lvl>'
            for level, (number_format, text) in enumerate(levels)
        )
        abstract = parse_xml(
            f'<w:abstractNum {W_NAMESPACE} w:abstractNumId="{abstract_id}">{lvls}</w:abstractNum>'
        )
        # every w:abstractNum comes before the first w:num, as the schema orders them
        numbering.xpath("./w:num")[0].addprevious(abstract)
    num_id = max(int(n) for n in numbering.xpath("./w:num/@w:numId")) + 1
    override = '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride>' if restart else ""
    instance = f'w:numId="{num_id}"><w:abstractNumId w:val="{abstract_id}"/>{override}'
    numbering.append(parse_xml(f"<w:num {W_NAMESPACE} {instance}</w:num>"))
    return str(num_id)


def number_paragraph(paragraph, num_id: str, level: int = 0) -> None:
    """Give a python-docx paragraph its own numbering properties, as Word writes a list item."""
    from docx.oxml import parse_xml

    paragraph._p.get_or_add_pPr().append(
        parse_xml(f'<w:numPr {W_NAMESPACE}><w:ilvl w:val="{level}"/><w:numId w:val="{num_id}"/></w:numPr>')
    )


# The numbering formats `make_expenses_docx` can number its steps with, as (numFmt, lvlText),
# and the markers Word shows for the four steps.
STEP_NUMBERING = {
    "paragraph": (("decimal", "%1."), ("1.", "2.", "3.", "4.")),
    "roman": (("upperRoman", "%1."), ("I.", "II.", "III.", "IV.")),
    "letter": (("lowerLetter", "%1)"), ("a)", "b)", "c)", "d)")),
}


def make_expenses_docx(target: Path, numbering: str = "style") -> None:
    """A Word guide: a heading, an introduction, a procedure of four numbered steps, a bulleted
    list and another section. `numbering` "style": the steps in the template's "List Number"
    style, numbered by the style; else plain paragraphs with their own numbering in one of
    `STEP_NUMBERING`'s formats."""
    import docx

    document = docx.Document()
    document.add_heading("Expense claims", level=1)
    document.add_paragraph("Staff are paid back for the costs of work travel within two weeks.")
    document.add_paragraph("To file an expense claim:")
    own = numbering in STEP_NUMBERING
    num_id = add_word_list(document, [STEP_NUMBERING[numbering][0]]) if own else ""
    for step in EXPENSE_STEPS:
        if own:
            number_paragraph(document.add_paragraph(step), num_id)
        else:
            document.add_paragraph(step, style="List Number")
    document.add_paragraph("A receipt must show:")
    for detail in ("the date of purchase", "the amount paid"):
        document.add_paragraph(detail, style="List Bullet")
    document.add_heading("Company cars", level=1)
    document.add_paragraph("Pool cars are booked at the front desk, and the fuel card stays in the glovebox.")
    document.save(str(target))


def make_xlsx(target: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Revenue"
    sheet.append(["Region", "Q3 revenue"])
    sheet.append(["North", "1.2M"])
    sheet.append(["Southwest", "quokka"])
    other = book.create_sheet("Staff")
    other.append(["Name", "Role"])
    other.append(["Ada", "narwhal keeper"])
    book.save(target)


def make_csv(target: Path, rows: int = 3) -> None:
    with target.open("w", encoding="utf-8", newline="") as handle:
        handle.write("city,landmark\n")
        handle.write("Lisbon,tram\nOslo,fjord\nLima,capybara\n" if rows == 3 else "")
        for number in range(rows if rows != 3 else 0):
            handle.write(f"city{number},landmark number {number}\n")


MANIFEST = (
    '<?xml version="1.0"?>'
    '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"/>'
)


def odf_zip(target: Path, mimetype: str, content: str) -> None:
    """An OpenDocument file by hand: mimetype first and stored, then the manifest and content."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), mimetype, compress_type=zipfile.ZIP_STORED)
        archive.writestr(
            "META-INF/manifest.xml",
            MANIFEST,
        )
        archive.writestr("content.xml", content)


_ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
)


def make_ods(target: Path) -> None:
    def row(*cells: str) -> str:
        return (
            "<table:table-row>"
            + "".join(f"<table:table-cell><text:p>{c}</text:p></table:table-cell>" for c in cells)
            + "</table:table-row>"
        )

    content = (
        f'<?xml version="1.0"?><office:document-content {_ODF_NS}><office:body><office:spreadsheet>'
        f'<table:table table:name="Birds">{row("Bird", "Habitat")}'
        '<table:table-row table:number-rows-repeated="1000000"><table:table-cell/></table:table-row>'
        f"{row('Puffin', 'cliffs')}{row('Kea', 'alpine')}</table:table>"
        "</office:spreadsheet></office:body></office:document-content>"
    )
    odf_zip(target, "application/vnd.oasis.opendocument.spreadsheet", content)


def make_odt(target: Path) -> None:
    content = (
        f'<?xml version="1.0"?><office:document-content {_ODF_NS}><office:body><office:text>'
        "<text:h>Garden notes</text:h><text:p>The rhubarb<text:s/>patch flourished.</text:p>"
        "</office:text></office:body></office:document-content>"
    )
    odf_zip(target, "application/vnd.oasis.opendocument.text", content)


_ODT_LIST_STYLES = (
    '<office:automatic-styles><text:list-style style:name="Steps">'
    '<text:list-level-style-number text:level="1" style:num-format="1" style:num-suffix="."/>'
    '<text:list-level-style-number text:level="2" style:num-format="a" style:num-suffix=")"/>'
    '</text:list-style><text:list-style style:name="Dots">'
    '<text:list-level-style-bullet text:level="1" text:bullet-char="*"/></text:list-style>'
    "</office:automatic-styles>"
)


def _odt_list(style: str, *items: str, attributes: str = "") -> str:
    """A list; an item is a paragraph's text, or a nested list's XML (starting "<") that
    goes into the item before it."""
    xml = ""
    for item in items:
        if item.startswith("<"):
            xml = xml.removesuffix("</text:list-item>") + item + "</text:list-item>"
        else:
            xml += f"<text:list-item><text:p>{item}</text:p></text:list-item>"
    return f'<text:list text:style-name="{style}"{attributes}>{xml}</text:list>'


def make_structured_odt(target: Path) -> None:
    """An OpenDocument text with numbered, nested, continued and bulleted lists, a footnote, a
    comment, a table with a list in a cell, and text deleted with change tracking on."""
    cell = "<table:table-cell><text:p>{}</text:p></table:table-cell>"
    body = (
        "<text:tracked-changes><text:changed-region text:id='c1'><text:deletion>"
        "<text:p>The old ferry timetable.</text:p></text:deletion></text:changed-region>"
        "</text:tracked-changes>"
        "<text:h>Boarding</text:h>"
        + _odt_list(
            "Steps", "Show your ticket", "Board the ferry", _odt_list("", "Find a seat", "Stow your bag")
        )
        + "<text:p>Then, at sea:</text:p>"
        + _odt_list("Steps", "Watch for dolphins", attributes=' text:continue-numbering="true"')
        + _odt_list("Dots", "No smoking on deck")
        + '<text:p>The crossing takes two hours<text:note text:note-class="footnote">'
        "<text:note-citation>1</text:note-citation><text:note-body><text:p>In calm weather.</text:p>"
        "</text:note-body></text:note> on most days.</text:p>"
        "<text:p>Cabins are extra<office:annotation><dc:creator>Ann</dc:creator><dc:date>2024-05-01</dc:date>"
        "<text:p>Check the price</text:p></office:annotation>.</text:p>"
        "<table:table><table:table-row>" + cell.format("Deck") + cell.format("Rules") + "</table:table-row>"
        "<table:table-row>"
        + cell.format("Upper")
        + "<table:table-cell>"
        + _odt_list("Steps", "Hold the rail", "Keep left")
        + "</table:table-cell></table:table-row></table:table>"
    )
    namespaces = (
        f"{_ODF_NS} xmlns:style='urn:oasis:names:tc:opendocument:xmlns:style:1.0' "
        "xmlns:dc='http://purl.org/dc/elements/1.1/'"
    )
    content = (
        f'<?xml version="1.0"?><office:document-content {namespaces}>{_ODT_LIST_STYLES}'
        f"<office:body><office:text>{body}</office:text></office:body></office:document-content>"
    )
    odf_zip(target, "application/vnd.oasis.opendocument.text", content)


def make_epub(target: Path) -> None:
    chapters = [
        ("Departure", "The caravan left at dawn."),
        ("Oasis", "They rested beside a pomegranate grove."),
    ]
    manifest = "".join(
        f'<item id="c{i}" href="text/c{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(2)
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(2))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED
        )
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?>'
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
            '<rootfiles><rootfile full-path="OEBPS/book.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        archive.writestr(
            "OEBPS/book.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            "<dc:title>Desert Journeys</dc:title></metadata>"
            f"<manifest>{manifest}</manifest><spine>{spine}</spine></package>",
        )
        for i, (title, text) in enumerate(chapters):
            archive.writestr(
                f"OEBPS/text/c{i}.xhtml",
                f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title></head>'
                f"<body><h1>{title}</h1><p>{text}</p></body></html>",
            )


def make_rtf(target: Path) -> None:
    target.write_text(
        r"{\rtf1\ansi{\fonttbl\f0\fswiss Helvetica;}\f0 The \b lighthouse keeper\b0  fed a cormorant.\par}"
    )


def mail(
    sender: str, subject: str, date: str, body: str, attachment: tuple[str, bytes] | None = None
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "team@example.com"
    message["Date"] = date
    message["Subject"] = subject
    message.set_content(body)
    if attachment:
        name, data = attachment
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return message


def make_eml(target: Path) -> None:
    note = mail(
        "Alice <alice@example.com>",
        "Budget",
        "Mon, 15 Apr 2024 10:00:00 +0000",
        "The budget includes a new espresso machine.",
        ("minutes.txt", b"Minutes: the committee approved the sundial."),
    )
    target.write_bytes(bytes(note))


def make_mbox(target: Path) -> None:
    import mailbox

    box = mailbox.mbox(str(target))
    box.add(
        mail("bob@example.com", "Old news", "Tue, 10 Jan 2023 09:00:00 +0000", "We discussed the walrus.")
    )
    box.add(
        mail(
            "carol@example.com", "Fresh news", "Wed, 05 Jun 2024 09:00:00 +0000", "We discussed the pelican."
        )
    )
    box.flush()
    box.close()


def make_scan_png(target: Path, text: str = "SCANNED INVOICE 1698") -> None:
    """A page image with large printed text and no text layer (for OCR)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1200, 300), "white")
    draw = ImageDraw.Draw(image)
    try:
        font = ImageFont.load_default(size=64)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    draw.text((40, 100), text, fill="black", font=font)
    image.save(target)


SOURCES = {
    "walk.py": "def gravel_path():\n    return 'python code'\n",
    "app.js": "function gravelPath() { return 'javascript'; }\n",
    "config.yaml": "gravel: yaml-setting\n",
}


def make_all(folder: Path) -> None:
    """One file of every format under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    make_pptx(folder / "deck.pptx")
    make_xlsx(folder / "book.xlsx")
    make_csv(folder / "cities.csv")
    make_ods(folder / "birds.ods")
    make_odt(folder / "garden.odt")
    make_epub(folder / "journeys.epub")
    make_rtf(folder / "keeper.rtf")
    make_eml(folder / "budget.eml")
    make_mbox(folder / "news.mbox")
    for name, text in SOURCES.items():
        (folder / name).write_text(text)
