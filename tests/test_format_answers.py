"""Asking about documents of each format, through the real `rag`: the quoted evidence is the
passage that answers, whole, and cites the page (slide, sheet, chapter) it is on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
