"""Office files through the real `rag`: what a person sees in the document is what `rag ingest`
indexes and `rag get` prints."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from format_files import make_structured_odt
from word_files import make_annotated_docx

from runner import rag


@pytest.fixture
def docs(tmp_path) -> Path:
    """A folder to ingest, beside (not around) the test's index."""
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


def _ingested_text(path: Path) -> str:
    """`rag ingest` the file's folder, then `rag get` the file: the text the index holds."""
    ingested = rag("ingest", str(path.parent))
    assert ingested.returncode == 0, ingested.stderr
    shown = rag("get", str(path))
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_rag_get_shows_a_word_files_notes_text_boxes_and_numbered_cells(docs):
    path = docs / "harbour.docx"
    make_annotated_docx(path)
    text = _ingested_text(path)
    assert "The tide tables were revised[1]\n\n[1] Source: the 1987 tide survey." in text
    assert "[i] Dates depend on the permit." in text
    assert "Comment by Ann: Check the figure with finance" in text
    assert "Sidebar: lifejackets are mandatory" in text
    assert "The ferry leaves at nine\n" in text and "eight" not in text
    assert "Docking | 1. Moor the boat 2. Tie the ropes" in text


def _budget_xlsx(path: Path) -> None:
    """A workbook openpyxl writes: formulas with no computed value stored, as from any program
    that writes spreadsheets without a spreadsheet program opening them."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Budget"
    sheet.append(["Item", "Cost", "Total"])
    sheet.append(["Ferry", 120, "=B2*2"])
    sheet.append(["Hotel", 300, "=SUM(B2:B3)"])
    workbook.save(path)


def _with_stored_values(path: Path, values: dict[str, str]) -> None:
    """Store a computed value for each formula, as a spreadsheet program does when it saves."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    sheet = members["xl/worksheets/sheet1.xml"]
    for formula, value in values.items():
        sheet = sheet.replace(f"<f>{formula}</f><v></v>".encode(), f"<f>{formula}</f><v>{value}</v>".encode())
    members["xl/worksheets/sheet1.xml"] = sheet
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_a_formula_without_a_stored_value_shows_its_formula(docs):
    """Such cells read as empty: the Total column vanished from the index."""
    written, saved = docs / "written.xlsx", docs / "saved.xlsx"
    _budget_xlsx(written)
    _budget_xlsx(saved)
    _with_stored_values(saved, {"B2*2": "240", "SUM(B2:B3)": "420"})
    assert (
        "row 2: Item: Ferry; Cost: 120; Total: =B2*2\nrow 3: Item: Hotel; Cost: 300; Total: =SUM(B2:B3)"
        in (_ingested_text(written))
    )
    assert "row 2: Item: Ferry; Cost: 120; Total: 240\nrow 3: Item: Hotel; Cost: 300; Total: 420" in (
        rag("get", str(saved)).stdout
    )


def test_rag_get_shows_an_odt_files_list_numbers_table_rows_and_notes(docs):
    """List items read as plain paragraphs, a footnote ran into the middle of its sentence, a
    comment's author and date into the text, each table cell was a paragraph of its own, and
    text deleted with change tracking on was indexed."""
    path = docs / "ferry.odt"
    make_structured_odt(path)
    assert _ingested_text(path).split("\n\n") == [
        "Boarding",
        "1. Show your ticket",
        "2. Board the ferry",
        "  a) Find a seat",
        "  b) Stow your bag",
        "Then, at sea:",
        "3. Watch for dolphins",
        "- No smoking on deck",
        "The crossing takes two hours[1] on most days.",
        "[1] In calm weather.",
        "Cabins are extra.",
        "Comment by Ann: Check the price",
        "Deck | Rules\nUpper | 1. Hold the rail 2. Keep left\n",
    ]


@pytest.mark.parametrize(
    ("header", "encoding", "text"),
    [
        (rb"{\rtf1\ansi\ansicpg1251\deff0", "cp1251", "Привет, мир"),
        (rb"{\rtf1\ansi\deff0", "cp1252", "Preis: 5 €, „Café“"),
        (rb"{\rtf1\mac\deff0", "mac_roman", "Crème brûlée"),
    ],
)
def test_rtf_with_raw_8_bit_text_is_read_in_its_code_page(docs, header, encoding, text):
    """Characters some programs write as raw bytes rather than escapes read as latin-1 ("Ïðèâåò")."""
    path = docs / "letter.rtf"
    path.write_bytes(header + b" " + text.encode(encoding) + rb"\par}")
    assert _ingested_text(path).strip() == text


def _sales_deck(path: Path) -> None:
    """A slide with a table whose header cell spans two columns, and a titled chart."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Sales"
    table = slide.shapes.add_table(2, 3, Inches(1), Inches(4), Inches(6), Inches(1)).table
    table.cell(0, 0).merge(table.cell(0, 1))
    for (row, column), text in {
        (0, 0): "Region",
        (0, 2): "Total",
        (1, 0): "North",
        (1, 1): "East",
        (1, 2): "9",
    }.items():
        table.cell(row, column).text = text
    data = CategoryChartData()
    data.categories = ["North", "East"]
    data.add_series("Units", (4, 5))
    chart = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1), Inches(4), Inches(2), data
    )
    chart.chart.has_title = True
    chart.chart.chart_title.text_frame.text = "Units sold per region"
    deck.save(path)


def test_a_slides_merged_cell_is_listed_once_and_its_chart_title_is_read(docs):
    """The merged cell left an empty cell behind it ("Region |  | Total"); a chart was not read."""
    path = docs / "sales.pptx"
    _sales_deck(path)
    text = _ingested_text(path)
    assert "Region | Total\nNorth | East | 9" in text
    assert "Units sold per region" in text
