"""Office files through the real `rag`: what a person sees in the document is what `rag ingest`
indexes and `rag get` prints."""

from __future__ import annotations

from pathlib import Path

import pytest
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
