"""Questions about a whole document: the search looks for the document named, and the summary
quotes the document's opening and its table of contents."""

from __future__ import annotations

from ragcli.answer.context import Source
import pytest

from ragcli.answer.summary import (
    asks_about_document,
    document_subject,
    extractive_summary,
    file_name_globs,
    named_documents,
)

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


@pytest.mark.parametrize(
    "question, about",
    [
        ("Summarize the tidy manual", True),
        ("what is the tidy page about?", True),
        ("what does the tidy guide cover?", True),
        ("what is the tidy page for?", True),
        ("what does git describe print?", False),  # a command named "describe"
        ("what is known about hidden files?", False),
        ("what does the tidy manual say about hidden files?", False),  # a question inside it
        ("what is the --dry-run flag for?", False),  # a purpose, but of no document
    ],
)
def test_which_questions_ask_about_a_whole_document(question, about):
    assert asks_about_document(question) is about


@pytest.mark.parametrize(
    "question, names",
    [
        ("what does the giteveryday document cover?", ["giteveryday"]),
        ("summarize notes/bread.md.", ["bread.md"]),
        ("what does the git-log man page say about --follow?", ["git-log"]),
        ("In the README file, how do I install it?", ["README"]),
        ("what is the man page for xz about?", ["xz"]),  # the kind of page first, then its name
        ("summarize the guide to the giteveryday workflow", ["giteveryday"]),
        ("how do I call os.path.join?", []),  # a dotted name, not a file
        ("what is on the main page?", []),
        # a title of several words, not a file name: its last word is not one either
        ("what is the functional programming howto about?", []),
        ("where in the git docs is rebase explained?", []),  # all the pages, not one
    ],
)
def test_a_question_names_a_document_by_its_file_name(question, names):
    assert named_documents(question) == names


def test_file_name_globs_match_either_case_in_any_folder():
    from fnmatch import fnmatchcase

    globs = file_name_globs("ReadMe")
    assert any(fnmatchcase("docs/README.md", g) for g in globs)
    assert any(fnmatchcase("readme.txt", g) for g in globs)
    assert not any(fnmatchcase("docs/readme-old.md", g) for g in globs)
    assert any(fnmatchcase("/home/me/notes/bread.md", g) for g in file_name_globs("bread.md"))
    assert not any(fnmatchcase("/home/me/notes/bread.mdx", g) for g in file_name_globs("bread.md"))


def test_a_summary_of_a_text_written_without_spaces_quotes_its_sentences():
    text = "中国茶的历史\n\n中国是茶的故乡，饮茶的历史已有数千年。唐代的陆羽被后人尊称为茶圣。\n"
    summary, chosen = extractive_summary(Source(1, "tea.txt", None, 1.0, text, (1,)), None, 300)
    assert len(chosen) == 2 and "陆羽" in summary


def test_centrality_is_judged_among_evenly_spaced_sentences_of_a_long_document():
    from ragcli.answer.sentences import sentences_of
    from ragcli.answer.summary import evenly

    sentences = sentences_of([" ".join(f"Sentence number {n} is here." for n in range(1000))])
    picked = evenly(sentences, 400)
    assert len(picked) == 400 and picked[0] is sentences[0]
    assert [s.start for s in picked] == sorted(s.start for s in picked)  # in document order
    assert picked[-1].start > sentences[990].start  # from the whole document, not its start
    assert evenly(sentences[:10], 400) == sentences[:10]


RECIPE = (
    "Flatbread\n\nFlatbread is the oldest bread, baked long before ovens had doors. "
    "It needs no yeast and no rising time, so it is ready within half an hour.\n\n"
    "Ingredients\n\n- 300 g flour\n- 180 g water\n- 5 g salt\n\n"
    "Method\n\n1. Mix the flour, water and salt into a soft dough.\n"
    "2. Rest the dough for ten minutes under a cloth.\n"
    "3. Roll it into thin rounds.\n4. Bake each round in a dry hot pan for a minute a side.\n"
)


@pytest.mark.parametrize("budget", [200, 330, 1000])
def test_a_summary_quotes_a_list_whole_or_not_at_all(budget):
    text, chosen = extractive_summary(Source(1, "flatbread.md", None, 1.0, RECIPE, (1,)), None, budget)
    steps = [n for n in range(1, 5) if f'"{n}. ' in text]
    assert steps in ([], [1, 2, 3, 4])
    ingredients = [item for item in ("300 g", "180 g", "5 g") if item in text]
    assert len(ingredients) in (0, 3)
    assert sum(len(s.text) + 6 for s in chosen) <= budget or len(chosen) == 1
    if budget == 1000:
        assert steps == [1, 2, 3, 4] and len(ingredients) == 3


def test_a_document_that_is_one_long_list_gets_its_first_items_and_says_it_continues():
    items = "\n".join(f"- Item number {n} is a long line about one change in a release." for n in range(40))
    text, chosen = extractive_summary(Source(1, "notes.md", None, 1.0, items + "\n", (1,)), None, 500)
    lines = text.split("\n")
    assert lines[0].startswith('"- Item number 0 ') and lines[-1] == "(the list continues in [1])"
    assert 2 <= len(chosen) < 40
