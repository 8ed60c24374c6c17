"""Asking about documents of each format, through the real `rag`: the quoted evidence is the
passage that answers, whole, and cites the page (slide, sheet, chapter) it is on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from format_files import STEP_NUMBERING, EXPENSE_STEPS, make_expenses_docx, make_text_pdf
from runner import rag


@pytest.fixture
def docs(tmp_path) -> Path:
    """A folder to ingest, beside (not around) the test's index."""
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


def _ask(folder: Path, question: str, *flags: str) -> dict:
    """`rag ingest FOLDER`, then `rag ask QUESTION --json`."""
    ingest = rag("ingest", str(folder))
    assert ingest.returncode == 0, ingest.stderr
    result = rag("ask", question, "--json", *flags)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _quotes(answer: dict) -> list[str]:
    return [line for line in answer["answer"].splitlines() if line.startswith('"')]


def test_each_spreadsheet_row_is_quoted_as_its_own_record(docs):
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Contacts"
    sheet.append(["Region", "Manager", "Phone"])
    sheet.append(["North", "Anna Berg", "+46 8 123 456"])
    sheet.append(["South", "Luis Ortega", "+34 91 555 0101"])
    sheet.append(["East", "Mei Chen", "+86 10 5555 0199"])
    book.save(docs / "contacts.xlsx")
    answer = _ask(docs, "What is the phone number of Luis Ortega?")
    quotes = _quotes(answer)
    assert any("row 3: Region: South; Manager: Luis Ortega; Phone: +34 91 555 0101" in q for q in quotes)
    # one record a quote: never the sheet's heading and its rows run together as one "sentence"
    assert all(q.count("row ") <= 1 and "Sheet:" not in q for q in quotes), quotes


def _epub(target: Path, book: str, chapters: list[tuple[str, str]]) -> None:
    """An EPUB whose every chapter file has the book's title as its <title>, as many have."""
    import zipfile

    items = "".join(
        f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
        for i in range(len(chapters))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            'version="1.0"><rootfiles><rootfile full-path="book.opf"/></rootfiles></container>',
        )
        archive.writestr(
            "book.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{book}</dc:title></metadata>'
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        for i, (heading, body) in enumerate(chapters):
            archive.writestr(
                f"c{i}.xhtml",
                f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{book}</title></head>'
                f"<body><h2>{heading}</h2>{body}</body></html>",
            )


def test_a_chapter_is_named_by_its_heading_not_the_book_title_every_file_repeats(docs):
    steps = "<p>Step the mast before you attach the boom.</p><p>Hoist the mainsail to the top.</p>"
    _epub(
        docs / "sailing.epub",
        "Small Boat Sailing",
        [("Rigging the dinghy", steps), ("Capsize recovery", "<p>Stand on the centreboard.</p>")],
    )
    assert rag("ingest", str(docs)).returncode == 0
    page = rag("get", str(docs / "sailing.epub:1")).stdout
    assert page.startswith("Chapter 1: Rigging the dinghy\n\nStep the mast"), page  # named once
    answer = rag("ask", "How do I rig the dinghy?", "--json").stdout
    assert "Step the mast before you attach the boom." in json.loads(answer)["answer"]


def test_a_quote_stays_on_the_page_its_citation_names(docs):
    """The sentences after a reason on a PDF's last lines were quoted from the next page, cited
    with this page's number."""
    make_text_pdf(
        docs / "pump manual.pdf",
        [
            ["Hydra-7 Pump Operator Manual", "This manual covers the Hydra-7 pump."],
            [
                "Installing the pump",
                "1. Close the inlet valve.",
                "2. Open the inlet valve slowly and prime the pump.",
                "The pump must be primed because a dry impeller overheats within seconds.",
            ],
            ["Maintenance schedule", "Task Interval Duration", "Replace seals 6 months 40 minutes"],
        ],
    )
    answer = _ask(docs, "Why must the pump be primed?")
    assert "a dry impeller overheats" in answer["answer"]
    assert [citation["page"] for citation in answer["citations"]] == [2]
    assert "Replace seals" not in answer["answer"] and "Maintenance" not in answer["answer"], answer["answer"]


def _cited_page_text(answer: dict, line: str, pages: list[list[str]]) -> str:
    """The text of the page the line's citation names (its source's path and page)."""
    number = int(line.rsplit("[", 1)[1].rstrip("]"))
    page = next(c["page"] for c in answer["citations"] if c["number"] == number)
    return " ".join(pages[page - 1])


def test_quotes_from_several_pages_of_one_passage_each_cite_their_own_page(docs):
    """Sentences quoted from pages 3 and 4 of one retrieved passage were cited with page 2,
    the page of its first quoted sentence."""
    pages = [
        ["Harbour operations manual.", "The harbour opens at six in the morning."],
        ["Tugboat crews work in shifts.", "The dredger Maria keeps the channel at twelve metres depth."],
        ["Storm rules apply above force eight.", "In storms the dredger Maria stays in the inner basin."],
        ["Fuel is delivered by barge.", "The dredger Maria was built in 1987 in Gdansk."],
    ]
    make_text_pdf(docs / "harbour.pdf", pages)
    answer = _ask(docs, "What does the dredger Maria do?")
    quotes = _quotes(answer)
    assert any("inner basin" in q for q in quotes) and any("Gdansk" in q for q in quotes), quotes
    for line in quotes:
        quoted = line[1 : line.rindex('"')]
        assert quoted in _cited_page_text(answer, line, pages), (line, answer["citations"])
    gdansk_line = next(q for q in quotes if "Gdansk" in q)
    gdansk = next(c for c in answer["citations"] if gdansk_line.endswith(f"[{c['number']}]"))
    shown = rag("get", f"{gdansk['path']}:{gdansk['page']}")  # the cited place, as `rag get` reads it
    assert "built in 1987 in Gdansk" in shown.stdout, shown.stderr


def test_a_list_that_goes_on_over_the_page_is_quoted_whole_each_item_with_its_page(docs):
    """A long line introducing a list ("...the following items:") was read as wrapped into its
    first item, so the list was not brought and its items on the next page were left out."""
    pages = [
        [
            "Boarding checklist",
            "Before departure the captain must check the following items:",
            "- life jackets for every passenger",
            "- the radio on channel 16",
        ],
        ["- fuel for the whole trip", "- the weather forecast", "Departure is logged in the book."],
    ]
    make_text_pdf(docs / "checklist.pdf", pages)
    answer = _ask(docs, "What must the captain check before departure?")
    quotes = _quotes(answer)
    for item in ("life jackets", "the radio", "fuel for the whole trip", "the weather forecast"):
        line = next((q for q in quotes if item in q), None)
        assert line is not None and line.startswith('"- '), (item, quotes)
        quoted = line[1 : line.rindex('"')]
        assert quoted in _cited_page_text(answer, line, pages), (line, answer["citations"])


def test_a_mail_attachment_identical_to_a_file_is_cited_as_the_file(docs):
    """The same report as a file and as a mail's attachment: the answer cited the attachment
    (it ranked first by the order of ingest), which no viewer opens at its own path."""
    from format_files import mail

    report = "Quarterly report\n\nThe lighthouse at Skerry Point was repainted in March.\n"
    (docs / "report.txt").write_text(report)
    note = mail("alice@example.com", "Report", "Mon, 15 Apr 2024 10:00:00 +0000", "See the report.", None)
    note.add_attachment(report.encode(), maintype="text", subtype="plain", filename="report.txt")
    (docs / "a note.eml").write_bytes(bytes(note))
    for question in ("When was the lighthouse at Skerry Point repainted?", "Summarise report.txt"):
        answer = _ask(docs, question, "--no-cache")
        assert [c["path"] for c in answer["citations"]] == [str(docs / "report.txt")], (question, answer)


def test_a_date_cell_reads_as_its_date(docs):
    """openpyxl reads an Excel date as midnight of that day: "2024-03-01T00:00:00" was stored."""
    import datetime

    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["Customer", "Order date", "Delivered"])
    book.active.append(["Initech", datetime.date(2024, 3, 1), datetime.datetime(2024, 3, 14, 9, 30)])
    book.save(docs / "orders.xlsx")
    assert rag("ingest", str(docs)).returncode == 0
    page = rag("get", str(docs / "orders.xlsx")).stdout
    assert "row 2: Customer: Initech; Order date: 2024-03-01; Delivered: 2024-03-14T09:30:00" in page, page


@pytest.mark.parametrize("numbering", ["style", "paragraph", "roman", "letter"])
def test_a_word_procedure_is_quoted_to_its_last_step(docs, numbering):
    """A Word list's numbers are not in its text: the steps read as plain paragraphs, and the
    answer quoted them and then the rest of the document, the next section included. Steps
    numbered "I." or "a)" were not seen as list items by the answer step either."""
    make_expenses_docx(docs / "expenses.docx", numbering)
    answer = _ask(docs, "How do I file an expense claim?")["answer"]
    markers = STEP_NUMBERING.get(numbering, STEP_NUMBERING["paragraph"])[1]
    steps = [f"{marker} {step}" for marker, step in zip(markers, EXPENSE_STEPS)]
    positions = [answer.find(f'"{step}"') for step in steps]
    assert -1 not in positions and positions == sorted(positions), answer
    assert "Company cars" not in answer and "Pool cars" not in answer, answer


def test_a_title_row_above_the_header_is_the_sheets_title(docs):
    """A title typed over a table (merged across it) was taken for the header: every record
    read "Regional contacts: North; column 2: Anna Berg", and the real header was a record."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Contacts"
    sheet.append(["Regional contacts"])
    sheet.merge_cells("A1:C1")
    sheet.append(["Region", "Manager", "Phone"])
    sheet.append(["North", "Anna Berg", "+46 8 123 456"])
    sheet.append(["South", "Luis Ortega", "+34 91 555 0101"])
    book.save(docs / "contacts.xlsx")
    answer = _ask(docs, "What is the phone number of Luis Ortega?")
    page = rag("get", str(docs / "contacts.xlsx")).stdout
    assert page.startswith("Sheet: Contacts (Regional contacts; rows 3-4; columns: Region, Manager, Phone)")
    assert "row 3: Region: North; Manager: Anna Berg; Phone: +46 8 123 456" in page, page
    assert any("Manager: Luis Ortega; Phone: +34 91 555 0101" in quote for quote in _quotes(answer))


def test_a_mails_sender_is_found_by_name(docs):
    """The text kept the bare addresses only: a question naming the sender found nothing."""
    from format_files import mail

    message = mail(
        "Jürgen Müller <J.Mueller@Firma.example>",
        "Lieferung",
        "Tue, 04 Mar 2025 10:00:00 +0100",
        "The valve delivery moves to April because the supplier lacks castings.",
    )
    (docs / "delivery.eml").write_bytes(bytes(message))
    assert rag("ingest", str(docs)).returncode == 0
    text = rag("get", str(docs / "delivery.eml")).stdout
    assert "From: Jürgen Müller <j.mueller@firma.example>" in text, text
    found = json.loads(rag("query", "Müller", "--mode", "bm25", "--json").stdout)["hits"]
    assert [hit["path"] for hit in found] == [str(docs / "delivery.eml")]
    by_address = rag("query", "valve", "--filter", "from=j.mueller@firma.example", "--json")
    assert json.loads(by_address.stdout)["hits"]  # the metadata keeps the bare address


def _generated_page(title: str, content: str) -> str:
    """A page as documentation generators write it: site chrome drawn by CSS and script
    around a <main> that holds the page's own text."""
    return (
        f"<html><head><title>{title} - The Garden Book</title></head><body>"
        '<div id="help-popup"><h2>Keyboard shortcuts</h2>'
        "<p>Press S or / to search in the book</p><p>Press ? to show this help</p></div>"
        '<ul class="theme-popup" role="menu"><li><button>Auto</button></li>'
        "<li><button>Light</button></li><li><button>Coal</button></li></ul>"
        '<h1 class="menu-title">The Garden Book</h1>'
        f"<main>{content}</main>"
        "</body></html>"
    )


def test_a_generated_pages_site_chrome_is_not_read_as_its_text(docs):
    """Every page of a generated book led with its keyboard-help popup and theme menu, and a
    question about a page quoted them ("Keyboard shortcuts (sections: Auto; Light; ...")."""
    (docs / "compost.html").write_text(
        _generated_page(
            "Composting",
            "<h1>Composting</h1><p>A compost heap turns kitchen scraps and leaves into soil.</p>"
            "<h2>Turning the heap</h2><p>Turn the heap every two weeks so air reaches its centre.</p>",
        ),
        encoding="utf-8",
    )
    (docs / "pruning.html").write_text(
        _generated_page("Pruning", "<h1>Pruning</h1><p>Prune roses in late winter.</p>"), encoding="utf-8"
    )
    answer = _ask(docs, "what is the composting page about?")["answer"]
    assert "A compost heap turns kitchen scraps" in answer
    assert not any(chrome in answer for chrome in ("Keyboard", "Press S", "Coal")), answer
    page = rag("get", str(docs / "compost.html")).stdout
    assert page.startswith("Composting\n\nA compost heap"), page
