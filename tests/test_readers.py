"""Readers: every format and every failure mode, on the committed fixtures."""

from __future__ import annotations

import os
import re
import unicodedata
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from format_files import EXPENSE_STEPS, add_word_list, make_expenses_docx, number_paragraph
from word_files import make_annotated_docx
from ragcli.errors import RagError, ReaderError
from ragcli.ingest.readers import (
    READERS,
    SUPPORTED_SUFFIXES,
    Reader,
    is_probably_binary,
    read_document,
    reader_for,
    reader_versions,
)

DOCS = Path(__file__).resolve().parent.parent / "fixtures" / "docs"
BROKEN = DOCS / "broken"


# --- registry -------------------------------------------------------------------------


def test_registry_covers_every_format():
    assert {
        ".txt",
        ".md",
        ".markdown",
        ".pdf",
        ".docx",
        ".html",
        ".htm",
    } <= SUPPORTED_SUFFIXES
    assert {reader.file_type for reader in READERS.values()} == {
        "txt",
        "md",
        "pdf",
        "docx",
        "html",
        "pptx",
        "ppt",
        "xlsx",
        "ods",
        "csv",
        "odt",
        "rtf",
        "epub",
        "code",
        "eml",
        "mbox",
        "image",
    }
    for suffix, reader in READERS.items():
        assert isinstance(reader, Reader)
        assert suffix in reader.suffixes
        assert isinstance(reader.version, str) and reader.version


def test_registry_is_read_only():
    with pytest.raises(TypeError):
        READERS[".xyz"] = READERS[".txt"]  # type: ignore[index]


def test_reader_versions_name_every_file_type():
    assert set(reader_versions()) == {reader.file_type for reader in READERS.values()}


@pytest.mark.parametrize(
    ("name", "file_type"),
    [
        ("a.txt", "txt"),
        ("B.MD", "md"),
        ("c.Pdf", "pdf"),
        ("d.docx", "docx"),
        ("e.htm", "html"),
    ],
)
def test_reader_for_is_case_insensitive(name, file_type):
    assert reader_for(Path(name)).file_type == file_type


def test_reader_for_unsupported_is_none():
    assert reader_for(Path("image.bin")) is None
    assert reader_for("Makefile") is None


def test_unsupported_suffix_raises_reader_error():
    with pytest.raises(ReaderError, match=r"image\.bin: unsupported file type '\.bin'"):
        read_document(DOCS / "misc" / "image.bin")


def test_missing_file_raises_reader_error(tmp_path):
    with pytest.raises(ReaderError, match="nowhere.txt: no such file"):
        read_document(tmp_path / "nowhere.txt")


def test_reader_error_is_a_rag_error():
    assert issubclass(ReaderError, RagError)


# --- metadata -------------------------------------------------------------------------


def test_document_path_and_metadata(monkeypatch):
    monkeypatch.chdir(DOCS)
    document = read_document(Path("bread_baking.md"))
    assert document.path == str((DOCS / "bread_baking.md").resolve())
    assert Path(document.path).is_absolute()
    meta = document.metadata
    assert meta["file_name"] == "bread_baking.md"
    assert meta["file_type"] == "md" == document.file_type
    assert meta["size"] == (DOCS / "bread_baking.md").stat().st_size
    for key in ("modified", "created"):
        stamp = datetime.fromisoformat(meta[key])
        assert stamp.utcoffset().total_seconds() == 0


def test_modified_is_the_file_mtime_in_utc(tmp_path):
    path = tmp_path / "dated.txt"
    path.write_text("dated", encoding="utf-8")
    os.utime(path, (0, 1_700_000_000))
    assert read_document(path).metadata["modified"] == "2023-11-14T22:13:20+00:00"
    assert datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc).timestamp() == 1_700_000_000


# --- plain text -----------------------------------------------------------------------


def test_a_text_file_is_titled_by_its_file_name(tmp_path):
    """Plain text has no markup to name it: its title is its file name without the suffix."""
    path = tmp_path / "ls.1.txt"
    path.write_text("LS(1)\n\nNAME\n       ls - list directory contents\n", encoding="utf-8")
    assert read_document(path).metadata["title"] == "ls.1"


def test_chinese_text_round_trips():
    document = read_document(DOCS / "chinese_tea.txt")
    assert document.file_type == "txt"
    assert document.text == (DOCS / "chinese_tea.txt").read_text(encoding="utf-8")
    assert "陆羽被后人尊称为“茶圣”" in document.text
    assert len(re.findall("[。！？]", document.text)) >= 10


def test_accented_text_round_trips():
    text = read_document(DOCS / "european_cafes.txt").text
    for word in ("café", "Müller", "niño", "Núñez", "façade", "gehört"):
        assert word in text


@pytest.mark.parametrize(
    "encoding",
    ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"],
)
def test_bom_encodings_decode(tmp_path, encoding):
    text = "Grüße aus Köln, 你好！\n"
    raw = text.encode(encoding)
    # Python's utf-16 / utf-32 codecs add a BOM; the -le / -be ones need it added.
    bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(encoding, b"")
    path = tmp_path / "bom.txt"
    path.write_bytes(bom + raw)
    assert read_document(path).text == text
    assert not is_probably_binary(path)


def test_text_is_normalised(tmp_path):
    path = tmp_path / "messy.txt"
    decomposed = unicodedata.normalize("NFD", "café niño")
    path.write_bytes(f"one\r\ntwo\rthree\x00\n{decomposed}\n".encode())
    text = read_document(path).text
    assert text == "one\ntwo\nthree\ncafé niño\n"
    assert unicodedata.is_normalized("NFC", text)


def test_latin1_text_is_reported_with_byte_and_offset():
    with pytest.raises(ReaderError) as caught:
        read_document(BROKEN / "latin1.txt")
    message = str(caught.value)
    assert "latin1.txt" in message
    assert "not valid UTF-8 text (byte 0xe9 at offset 6)" in message
    assert "\n" not in message


# --- markdown -------------------------------------------------------------------------


def test_markdown_keeps_text_and_takes_title_from_heading():
    document = read_document(DOCS / "bread_baking.md")
    assert document.file_type == "md"
    assert document.metadata["title"] == "Baking Sourdough Bread at Home"
    assert "| 70 %      | 350 g" in document.text
    assert "- 500 g bread flour" in document.text


def test_chinese_markdown_front_matter_title_wins_and_is_removed():
    document = read_document(DOCS / "great_wall.md")
    assert document.metadata["title"] == "万里长城简介"
    assert document.text.startswith("# 长城\n")
    assert "lang: zh" not in document.text
    assert "“不到长城非好汉。”" in document.text


def test_markdown_heading_inside_code_fence_is_not_the_title(tmp_path):
    path = tmp_path / "notes.markdown"
    path.write_text("```bash\n# install it\n```\n\n# Real Title #\n\nBody.\n", encoding="utf-8")
    assert read_document(path).metadata["title"] == "Real Title"


def test_markdown_without_heading_has_no_title(tmp_path):
    path = tmp_path / "plain.md"
    path.write_text("Just a line.\n## Only a subheading\n", encoding="utf-8")
    assert "title" not in read_document(path).metadata


# --- PDF ------------------------------------------------------------------------------


def test_pdf_pages_are_separated_by_form_feeds():
    document = read_document(DOCS / "lighthouses.pdf")
    assert document.file_type == "pdf"
    assert document.metadata["pages"] == 4
    assert document.metadata["title"] == "A Short History of the Lighthouse"
    pages = document.text.split("\f")
    assert len(pages) == 4
    assert "Pharos of Alexandria" in pages[0]
    assert "The Eddystone Lighthouse was first lit in 1698" in pages[1]
    assert "In 1822 the French physicist Augustin-Jean Fresnel" in pages[2]
    assert "North Foreland" in pages[3]


def test_encrypted_pdf_raises():
    with pytest.raises(ReaderError, match=r"encrypted\.pdf: encrypted PDF"):
        read_document(BROKEN / "encrypted.pdf")


def test_pdf_with_empty_user_password_is_read(tmp_path):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(DOCS / "lighthouses.pdf"))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    path = tmp_path / "restricted.pdf"
    with open(path, "wb") as handle:
        writer.write(handle)
    document = read_document(path)
    assert document.metadata["pages"] == 4
    assert "first lit in 1698" in document.text


def test_corrupt_pdf_raises():
    with pytest.raises(ReaderError, match=r"corrupt\.pdf: corrupt PDF: "):
        read_document(BROKEN / "corrupt.pdf")


def test_empty_pdf_file_raises(tmp_path):
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    with pytest.raises(ReaderError, match=r"empty\.pdf: corrupt PDF"):
        read_document(path)


def test_scanned_pdf_raises():
    with pytest.raises(
        ReaderError,
        match=r"scanned\.pdf: no text layer \(scanned PDF\?\)",
    ):
        read_document(BROKEN / "scanned.pdf")


# --- DOCX -----------------------------------------------------------------------------


def test_docx_paragraphs_and_table_in_body_order():
    document = read_document(DOCS / "himalayan_peaks.docx")
    text = document.text
    assert document.file_type == "docx"
    assert document.metadata["title"] == "Himalayan Peaks"
    order = [
        "The Himalaya is the highest mountain range",
        "The table lists the four highest peaks",
        "Mountain | Height (m) | First ascent | Climbers",
        "Mount Everest | 8,849 | 1953 | Edmund Hillary and Tenzing Norgay",
        "Lhotse | 8,516 | 1956",
        "Mount Everest was first climbed on 29 May 1953",
        "Climbing seasons",
    ]
    positions = [text.index(snippet) for snippet in order]
    assert positions == sorted(positions)


def test_docx_merged_cell_is_listed_once():
    text = read_document(DOCS / "himalayan_peaks.docx").text
    assert text.count("Heights from the 2020 China-Nepal survey") == 1


def test_docx_title_falls_back_to_heading(tmp_path):
    import docx

    document = docx.Document()
    document.add_heading("Über die Alpen", level=1)
    document.add_paragraph("Der Mont Blanc ist 4.805 m hoch.")
    path = tmp_path / "alpen.docx"
    document.save(str(path))
    read = read_document(path)
    assert read.metadata["title"] == "Über die Alpen"
    assert read.text == "Über die Alpen\n\nDer Mont Blanc ist 4.805 m hoch."


@pytest.mark.parametrize("numbering", ["style", "paragraph"])
def test_docx_list_items_keep_their_numbers_and_bullets(tmp_path, numbering):
    """Word's numbering is not in the paragraph's text: the steps read as plain paragraphs and
    nothing said where the procedure ended."""
    path = tmp_path / "expenses.docx"
    make_expenses_docx(path, numbering)
    text = read_document(path).text
    steps = "\n\n".join(f"{n}. {step}" for n, step in enumerate(EXPENSE_STEPS, 1))
    assert f"To file an expense claim:\n\n{steps}\n\nA receipt must show:" in text, text
    assert "\n\n- the date of purchase\n\n- the amount paid\n\nCompany cars\n\n" in text, text
    assert text.startswith("Expense claims\n\nStaff are paid back")  # headings and prose unmarked


def test_docx_nested_and_restarted_lists_are_counted_as_word_counts_them(tmp_path):
    import docx

    document = docx.Document()
    levels = [("decimal", "%1."), ("lowerLetter", "%2)"), ("lowerRoman", "%3."), ("upperRoman", "%1.%4")]
    outline = add_word_list(document, levels)
    for text, level in [("Pack", 0), ("Tent", 1), ("Stove", 1), ("Gas", 2), ("Drive", 0), ("Park", 1)]:
        number_paragraph(document.add_paragraph(text), outline, level)
    number_paragraph(document.add_paragraph("Deep"), outline, 3)
    document.add_paragraph("Then, at the campsite:")
    number_paragraph(document.add_paragraph("Pitch"), add_word_list(document, levels, restart=True))
    # numbering switched off on a paragraph whose style numbers it
    number_paragraph(document.add_paragraph("Unnumbered, in a list style", style="List Number"), "0")
    plain = document.add_paragraph("Bulleted by its style alone", style="List Bullet 2")
    plain.style.element.pPr.remove(plain.style.element.pPr.numPr)
    path = tmp_path / "trip.docx"
    document.save(str(path))
    assert read_document(path).text.split("\n\n") == [
        "1. Pack",
        "  a) Tent",
        "  b) Stove",
        "    i. Gas",
        "2. Drive",
        "  a) Park",
        "      2.I Deep",
        "Then, at the campsite:",
        "1. Pitch",
        "Unnumbered, in a list style",
        "  - Bulleted by its style alone",
    ]


def test_docx_reads_what_word_shows_beside_and_inside_the_text(tmp_path):
    """Footnotes, endnotes, comments, text boxes, tracked insertions, content controls, nested
    tables and numbered lists in table cells were dropped; the deleted text stays out, the text
    box is read once (not again from its fallback copy), headers and footers once at the end."""
    path = tmp_path / "harbour.docx"
    make_annotated_docx(path)
    assert read_document(path).text.split("\n\n") == [
        "Prepared for the harbour board.",
        "Harbour report",
        "The tide tables were revised[1]",
        "[1] Source: the 1987 tide survey.",
        "Dredging starts in May[i]",
        "[i] Dates depend on the permit.",
        "The budget was approved.",
        "Comment by Ann: Check the figure with finance",
        "Safety first.",
        "Sidebar: lifejackets are mandatory",
        "The ferry leaves at nine",
        "Task Crew; Pilot | Steps\nDocking | 1. Moor the boat 2. Tie the ropes",
        "Harbour board - internal",
        "Port of Leith",
    ]


def test_docx_header_repeated_by_every_section_is_read_once(tmp_path):
    import docx
    from docx.enum.section import WD_SECTION

    document = docx.Document()
    document.add_paragraph("Chapter one text.")
    document.sections[0].header.paragraphs[0].text = "Tender 42 - confidential"
    document.add_section(WD_SECTION.NEW_PAGE)
    document.add_paragraph("Chapter two text.")
    second = document.sections[1].header
    second.is_linked_to_previous = False
    second.paragraphs[0].text = "Tender 42 - confidential"
    path = tmp_path / "tender.docx"
    document.save(str(path))
    assert read_document(path).text == "Chapter one text.\n\nChapter two text.\n\nTender 42 - confidential"


def test_docx_paragraph_styles_are_looked_up_once_per_style(tmp_path, monkeypatch):
    """python-docx finds a paragraph's default style by scanning every style, on every lookup;
    looked up for each paragraph (several times), a Word file of 20,000 paragraphs took minutes."""
    import docx
    from docx.oxml.styles import CT_Styles

    scans = []
    scan = CT_Styles.default_for
    monkeypatch.setattr(
        CT_Styles, "default_for", lambda styles, kind: scans.append(kind) or scan(styles, kind)
    )
    document = docx.Document()
    document.add_heading("Tide tables", level=1)
    for number in range(200):
        document.add_paragraph(f"High water at berth {number}.")
    path = tmp_path / "tides.docx"
    document.save(str(path))
    read = read_document(path)
    assert read.text.endswith("High water at berth 199.") and read.metadata["title"] == "Tide tables"
    assert len(scans) <= 2, len(scans)  # one per ParagraphStyles: the body's and the title's


def test_text_renamed_as_docx_raises():
    with pytest.raises(ReaderError, match=r"not_a_docx\.docx: not a valid DOCX file"):
        read_document(BROKEN / "not_a_docx.docx")


def test_zip_without_word_document_raises(tmp_path):
    path = tmp_path / "hollow.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "no word/document.xml here")
    with pytest.raises(ReaderError, match=r"hollow\.docx: not a valid DOCX file"):
        read_document(path)


# --- HTML -----------------------------------------------------------------------------


def test_html_visible_text_title_and_paragraphs():
    document = read_document(DOCS / "octopus.html")
    text = document.text
    assert document.file_type == "html"
    assert document.metadata["title"] == "The Remarkable Octopus"
    assert "An octopus has three hearts and blue blood." in text
    assert "NOISE" not in text and "font-family" not in text and "Home" not in text
    paragraphs = text.split("\n\n")
    assert paragraphs[0] == "The Remarkable Octopus"
    assert any(p.startswith("About two thirds of an octopus") for p in paragraphs)
    assert "of a second.\nIt can also change" in text
    assert "\n\n\n" not in text


def test_html_table_cells_hidden_nodes_and_entities(tmp_path):
    path = tmp_path / "page.htm"
    path.write_text(
        "<html><body><p>Caf&eacute; <em>cr&egrave;me</em></p>"
        "<div hidden>secret</div>"
        "<table><tr><th>Tea</th><th>Origin</th></tr><tr><td>龙井</td><td>杭州</td></tr></table>"
        "</body></html>",
        encoding="utf-8",
    )
    document = read_document(path)
    assert document.text == "Café crème\n\nTea | Origin\n龙井 | 杭州"
    assert "title" not in document.metadata


def test_html_main_landmark_is_the_page_unless_there_are_several(tmp_path):
    """Site chrome drawn by CSS (a help popup, a theme menu) sits outside <main>; a page with two
    main landmarks side by side says nothing about which is the page, so all of it is read."""
    chrome = '<div id="help"><p>Press ? to show this help</p></div><ul role="menu"><li>Coal</li></ul>'
    one = tmp_path / "one.html"
    one.write_text(
        f"<body>{chrome}<main><p>Tea</p><div role='main'><p>Café</p></div></main></body>", encoding="utf-8"
    )
    assert read_document(one).text == "Tea\n\nCafé"
    two = tmp_path / "two.html"
    two.write_text(
        f"<body>{chrome}<main><p>Tea</p></main><div role='main'><p>Café</p></div></body>", encoding="utf-8"
    )
    assert read_document(two).text.startswith("Press ? to show this help")


def test_html_permalink_signs_are_left_out_other_same_page_links_kept(tmp_path):
    """Sphinx, MkDocs and Docusaurus end each heading and API entry with a link to itself drawn
    as a sign; a link with words or a footnote's number is text."""
    page = tmp_path / "page.html"
    page.write_text(
        '<h2>Argument Passing<a class="headerlink" href="#argument-passing">¶</a></h2>'
        '<dl><dt>gather(*aws)<a class="headerlink" href="#gather">¶</a></dt><dd><p>Run them.</p></dd></dl>'
        '<h3><a class="hash-link" href="#setup">\u200b</a>Setup</h3>'
        '<p>See <a href="#argument-passing">the section above</a> and note<a href="#fn1">1</a>.</p>',
        encoding="utf-8",
    )
    text = read_document(page).text
    paragraphs = [
        "Argument Passing",
        "gather(*aws)",
        "Run them.",
        "Setup",
        "See the section above and note1.",
    ]
    assert text == "\n\n".join(paragraphs)


# --- binary detection -----------------------------------------------------------------


def test_binary_detection():
    assert is_probably_binary(DOCS / "misc" / "image.bin")
    for name in (
        "chinese_tea.txt",
        "european_cafes.txt",
        "bread_baking.md",
        "octopus.html",
        ".hidden.txt",
    ):
        assert not is_probably_binary(DOCS / name)


def test_binary_detection_only_sniffs_the_first_8_kib(tmp_path):
    path = tmp_path / "late_nul.txt"
    path.write_bytes(b"a" * 8192 + b"\x00")
    assert not is_probably_binary(path)
    path.write_bytes(b"a" * 8191 + b"\x00")
    assert is_probably_binary(path)


def test_binary_detection_of_missing_file_defers_to_the_reader(tmp_path):
    assert not is_probably_binary(tmp_path / "missing.txt")


def test_hidden_file_is_still_readable():
    # Skipping hidden files is the walker's job; the reader itself reads them.
    assert "zanzibar" in read_document(DOCS / ".hidden.txt").text
