"""Questions about a whole document: the search looks for the document named, and the summary
quotes the document's opening and its table of contents."""

from __future__ import annotations

from ragcli.answer.context import Source
from ragcli.answer.summary import document_subject, extractive_summary

PAGE = (
    "Tidy Manual\n\nNAME\n\ntidy - Sort the files of a folder into dated subfolders\n\n"
    "DESCRIPTION\n\nThis page explains how tidy decides where each file goes. "
    "It also lists what tidy never moves.\n\n"
    "Moving files\n\nEvery file is moved into a folder named after the day it was last changed. "
    "Files changed on the same day share a folder. Folders are created as needed.\n\n"
    "---o---o---M\n\nFiles that are open in another program are left where they are. "
    "Hidden files are left where they are.\n"
)


def test_the_search_for_a_summary_looks_for_the_document_named():
    assert document_subject("give me a summary of what the tidy manual covers") == "the tidy manual"
    assert document_subject("How do I sort my files?") == "How do I sort my files?"


def test_a_summary_quotes_the_opening_and_the_headings_made_of_words():
    text, chosen = extractive_summary(Source(1, "tidy.md", None, 1.0, PAGE, (1,)), None, 300)
    title, *quoted = text.split("\n")
    assert title.startswith("Tidy Manual (sections: NAME; DESCRIPTION; Moving files)")
    assert "---o" not in title
    assert quoted[0] == '"tidy - Sort the files of a folder into dated subfolders" [1]'
    assert '"This page explains how tidy decides where each file goes." [1]' in quoted
