"""Citations and hits name their place in the document's own unit: slide, sheet and rows, chapter.

The ``path:page`` form stays (it is what `rag get` and `rag open` take); the words after it are
for people. Unit tests of `ragcli.places`, then the sample deck and spreadsheet through the real
`rag query` and `rag ask`.
"""

from __future__ import annotations

import json

import pytest

from runner import rag

from ragcli.places import cited_place, place


@pytest.mark.parametrize(
    "path, page, text, expected",
    [
        ("deck.pptx", 3, "Slide 3: Budget\n\nQ3 figures", "slide 3"),
        ("deck.pptx", 1, "Slide 1: Intro\fSlide 2: Plan", "slides 1-2"),
        ("deck.pptx", 2, "Slide 2: Plan\n\nNotes: budget\f", "slide 2"),  # a break ends it
        ("sales.xlsx", 1, "Sheet: Revenue\nrow 2: Region: N\f\n", "sheet 1, row 2"),
        ("deck.odp", 2, '"Slide 2: Plan" [1]\n"Slide 4: Risks" [1]', "slides 2-4"),
        ("book.epub", 4, "Chapter 4: The sea", "chapter 4"),
        ("sales.xlsx", 2, "Sheet: Revenue\nrow 7: Region: N\nrow 12: Region: S", "sheet 2, rows 7-12"),
        ("sales.ods", 1, '"row 9: Region: East; Q3: 4" [2]', "sheet 1, row 9"),
        ("table.csv", None, "row 2: a: 1 row 5: a: 4", "rows 2-5"),
        ("report.pdf", 5, "row 3: not a sheet", None),  # a PDF page says page by its :5
        ("report.pdf", 3, "end of page 3\fpage 4\fand 5", "pages 3-5"),  # :3 alone hides 4 and 5
        ("report.pdf", 3, "all of page 3\f", None),  # the break that closes it starts no page
        ("notes.md", None, "row 3: a markdown line", None),
        ("notes.txt", None, "", None),
    ],
)
def test_place_in_the_documents_own_unit(path, page, text, expected):
    assert place(path, page, text) == expected


def test_cited_place_keeps_the_path_page_form_first():
    assert cited_place("deck.pptx", 3, "Slide 3: x") == "deck.pptx:3 (slide 3)"
    assert cited_place("paper.pdf", 2, "text") == "paper.pdf:2"
    assert cited_place("notes.md", None, "text") == "notes.md"


@pytest.fixture
def office_index(corpus_index, isolated_home):
    """A slide deck and a spreadsheet, their index copied to this test's index home."""
    office = corpus_index("office")
    office.copy(isolated_home)
    return office.docs


def test_query_table_names_the_slide_and_the_sheet_rows(office_index):
    slides = rag("query", "Venice first coffee house", "--mode", "bm25", "-k", "1", "--format", "table")
    assert slides.returncode == 0, slides.stderr
    assert "coffee_houses.pptx:1 (slide" in slides.stdout
    sheet = rag("query", "Tieguanyin oolong tonnes", "--mode", "bm25", "-k", "1", "--format", "table")
    assert "tea_harvests.xlsx:1 (sheet 1, rows 2-5)" in sheet.stdout, sheet.stdout
    # Scripts keep the machine form: the path:page `rag get` takes, the JSON page a number.
    piped = rag("query", "Tieguanyin oolong tonnes", "--mode", "bm25", "-k", "1")
    assert piped.stdout.split("\t")[2] == f"{office_index / 'tea_harvests.xlsx'}:1", piped.stdout
    shaped = rag("query", "Tieguanyin oolong tonnes", "--mode", "bm25", "-k", "1", "--json")
    hit = json.loads(shaped.stdout)["hits"][0]
    assert hit["page"] == 1 and hit["place"] == "sheet 1, rows 2-5"  # the words, for pages and agents


def test_one_page_chunks_name_one_slide_and_one_sheet(office_index):
    """Split one slide or sheet a chunk, each chunk ends with the page break that closes its
    page; that break starts no page of its own."""
    docs = str(office_index)
    split = ("--group", "pages", "--split-by", "page", "--chunk-size", "1", "--chunk-overlap", "0")
    assert rag("ingest", docs, *split).returncode == 0
    shaped = rag("query", "penny universities", "-g", "pages", "-k", "3", "--json")
    hits = json.loads(shaped.stdout)["hits"]
    assert [hit["place"] for hit in hits] == [f"slide {hit['page']}" for hit in hits], hits
    sheets = json.loads(rag("query", "Tieguanyin oolong", "-g", "pages", "-k", "1", "--json").stdout)
    assert sheets["hits"][0]["place"].startswith(f"sheet {sheets['hits'][0]['page']}, rows")
    table = rag("query", "penny universities", "-g", "pages", "-k", "1", "--format", "table")
    assert "coffee_houses.pptx:2 (slide 2)" in table.stdout, table.stdout


def test_ask_cites_the_sheet_and_rows_it_quotes(office_index):
    answer = rag("ask", "How many tonnes of Tieguanyin oolong were harvested in Fujian?")
    assert answer.returncode == 0, answer.stderr
    assert "Tonnes: 310" in answer.stdout
    assert "tea_harvests.xlsx:1 (sheet 1, row" in answer.stdout, answer.stdout
    shaped = rag("ask", "How many tonnes of Tieguanyin oolong were harvested in Fujian?", "--json")
    citation = json.loads(shaped.stdout)["citations"][0]
    assert citation["page"] == 1 and citation["place"].startswith("sheet 1, row"), citation


def test_open_a_mailbox_message_opens_its_mailbox_and_says_so(tmp_path, isolated_home):
    """A message stored as ``inbox.mbox#2`` has no file of its own: `rag get` prints it, `rag
    open` starts the viewer on the mailbox and names the part, with a stand-in viewer on PATH."""
    import mailbox
    import os
    import subprocess
    import sys
    import time
    from email.message import EmailMessage

    docs = tmp_path / "mail"
    docs.mkdir()
    box = mailbox.mbox(docs / "inbox.mbox")
    messages = (("Budget", "The budget is four million."), ("Picnic", "The picnic is at the lake."))
    for subject, body in messages:
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = "a@example.com", "b@example.com", subject
        message.set_content(body)
        box.add(message)
    box.flush()
    assert rag("ingest", str(docs)).returncode == 0
    part = f"{docs / 'inbox.mbox'}#2"
    assert "The picnic is at the lake." in rag("get", part).stdout

    bin_dir, record = tmp_path / "bin", tmp_path / "opened.txt"
    bin_dir.mkdir()
    (bin_dir / "xdg-open").write_text(f'#!/bin/sh\necho "$@" >> {record}\n')
    (bin_dir / "xdg-open").chmod(0o755)
    env = {**os.environ, "DISPLAY": ":0", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "ragcli", "open", part], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert "#2 is inside it" in done.stderr
    # The detached viewer runs in its own time; its shell creates the file before echo writes.
    deadline = time.monotonic() + 120
    while not (record.exists() and record.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert record.read_text().split() == [str(docs / "inbox.mbox")]


def test_a_query_hit_over_several_pdf_pages_names_them(tmp_path):
    """A hit whose chunk ran from page 1 to page 3 of a PDF showed only ``report.pdf:1``,
    though the words it matched were on page 3."""
    from format_files import make_text_pdf

    folder = tmp_path / "docs"
    folder.mkdir()
    pages = [["Harbour manual."], ["Tugboats."], ["The dredger was built in 1987."]]
    make_text_pdf(folder / "report.pdf", pages)
    assert rag("ingest", str(folder)).returncode == 0
    table = rag("query", "dredger built", "--mode", "bm25", "--format", "table")
    assert "report.pdf:1 (pages 1-3)" in " ".join(table.stdout.split()), table.stdout
    hit = json.loads(rag("query", "dredger built", "--mode", "bm25", "--json").stdout)["hits"][0]
    assert (hit["page"], hit["place"]) == (1, "pages 1-3")
