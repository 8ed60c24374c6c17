"""Sentences, the evidence gate, the short-line readers and the answer styles that remain."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fakes import EchoGenerator, HashEmbedder
from ragcli.answer.ask import Asker
from ragcli.answer.options import AskOptions
from ragcli.answer.evidence import is_answerable
from ragcli.answer.readers import Short, TypedReader, answer_type, checked
from ragcli.config import load_settings
from ragcli.errors import UsageError
from ragcli.ingest.pipeline import ingest
from ragcli.answer.prompting import NOT_FOUND
from ragcli.retrieval.search import QueryOptions
from ragcli.answer.sentences import Sentence, lexical_scores, select_sentences, sentences_of
from ragcli.text import sentence_spans
from ragcli.types import ChunkSettings

BOWL = (
    "The Broncos defeated the Pittsburgh Steelers in the divisional round. Peyton Manning was 39 years "
    "old when he played in Super Bowl 50. The game was played on February 7, 2016, at Levi's Stadium "
    "in Santa Clara."
)


def sentence(text: str, score: float = 1.0) -> Sentence:
    return Sentence(text, 0, 0, score)


# -- sentences ---------------------------------------------------------------------------------
def test_sentence_spans_keeps_abbreviations_and_decimals_whole():
    text = "The U.S. Army paid 3.14 dollars. Then it left!\nA new line starts here"
    pieces = [text[s:e] for s, e in sentence_spans(text)]
    assert pieces == ["The U.S. Army paid 3.14 dollars.", "Then it left!", "A new line starts here"]


def test_a_blank_line_or_a_unit_after_a_degree_sign_ends_a_sentence():
    """A letter before a period looks like an initial ("J. Smith"), but not after a degree sign,
    and nothing runs across a blank line: a list item read from HTML has no number to end it."""
    text = "Heat the water to 72 °C.\n\nStir in the malt at 65 °C. Hold it there.\n\nBy J.\n\nNext."
    pieces = [text[a:b] for a, b in sentence_spans(text)]
    assert pieces == [
        "Heat the water to 72 °C.",
        "Stir in the malt at 65 °C.",
        "Hold it there.",
        "By J.",
        "Next.",
    ]
    initials = "Written by J. R. R. Tolkien. Then."
    assert [initials[a:b] for a, b in sentence_spans(initials)] == ["Written by J. R. R. Tolkien.", "Then."]


def test_a_long_list_item_without_a_full_stop_ends_before_the_next_item():
    text = (
        "* Runs on a local install without package arguments, with flags like --production\n"
        "* Runs AFTER prepack, but BEFORE postpack\n"
        "* Runs for a package installed as a link"
    )
    pieces = [text[s:e] for s, e in sentence_spans(text)]
    assert pieces == text.split("\n")


def test_sentences_of_numbers_passages_and_offsets():
    found = sentences_of(["One. Two.", "Three."])
    assert [(s.text, s.passage, s.start) for s in found] == [("One.", 0, 0), ("Two.", 0, 5), ("Three.", 1, 0)]


def test_lexical_score_is_the_weighted_share_of_question_terms():
    found = sentences_of(["Manning was 39 years old in Super Bowl 50. The weather was cold."])
    scores = lexical_scores("How old was Peyton Manning in Super Bowl 50?", found)
    assert 0.5 < scores[0] < 1.0 and scores[1] == 0.0


def test_select_sentences_ranks_the_answering_sentence_first():
    chosen = select_sentences("Who lost to the Broncos in the divisional round?", [BOWL], keep=2)
    assert chosen[0].text.startswith("The Broncos defeated the Pittsburgh Steelers") and len(chosen) == 2


def test_embeddings_add_to_the_lexical_score():
    plain = select_sentences("Who lost to the Broncos?", [BOWL], keep=1)[0]
    mixed = select_sentences("Who lost to the Broncos?", [BOWL], keep=1, embedder=HashEmbedder(512))[0]
    assert mixed.text == plain.text and mixed.dense > 0 and plain.dense == 0


def test_a_page_break_ends_a_sentence_and_a_paragraph():
    """A sheet's last row ran into the next sheet's title as one quote, cited to one sheet; a PDF
    (no blank lines) took a heading from the page before as the label of this page's text."""
    from ragcli.answer.structure import paragraph_label

    text = "Sheet: Revenue\nrow 2: North 1.2M\fSheet: Staff\nrow 2: Alice Quokka wrangles platypuses."
    sheets = [s.text for s in sentences_of([text])]
    assert sheets == [  # a sheet's heading and each of its records are sentences of their own
        "Sheet: Revenue",
        "row 2: North 1.2M",
        "Sheet: Staff",
        "row 2: Alice Quokka wrangles platypuses.",
    ]
    pdf = "Intro text here.\nThe Old Tower\nIt was lit in 1698.\fThe lens bends light into a beam."
    every = sentences_of([pdf])
    assert paragraph_label(every[-1], every, pdf) is None
    assert paragraph_label(every[2], every, pdf).text == "The Old Tower"


def test_a_numbered_list_item_keeps_its_number():
    text = "Steps:\n1. Mix the flour. Rest it.\n2. Add the salt."
    pieces = [text[s:e] for s, e in sentence_spans(text)]
    assert pieces == ["Steps:", "1. Mix the flour.", "Rest it.", "2. Add the salt."]


# -- abstention --------------------------------------------------------------------------------
def test_is_answerable_by_lexical_or_dense_evidence():
    assert is_answerable(Sentence("x", 0, 0, lexical=0.8, dense=0.1))
    assert is_answerable(Sentence("x", 0, 0, lexical=0.1, dense=0.7))
    assert not is_answerable(Sentence("x", 0, 0, lexical=0.2, dense=0.3))
    assert not is_answerable(None)


# -- the built-in reader ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who wrote it?", "name"),
        ("When did the game start?", "date"),
        ("How many sacks did he make?", "number"),
        ("how much does it weigh", "number"),
        ("What is the capital?", None),
        ("Which player led the team?", None),
        ("Why is it blue?", None),
        ("What satellite was used when the service began?", None),  # "when" joins a clause
        ("What villain of Doctor Who is a Time Lord?", None),  # "Who" is part of a title
        ("How does it work?", None),
    ],
)
def test_the_wh_word_alone_types_the_short_answer(question, kind):
    assert answer_type(question) == kind


def read(question: str, *texts: str) -> str | None:
    found = TypedReader().read(question, [Sentence(text, 0, 0) for text in texts])
    return found.text if found else None


def test_the_reader_gives_names_dates_and_numbers_from_the_best_sentence():
    assert read("When was the game played?", BOWL.split(". ")[2]) == "February 7, 2016"
    assert read("How old was Manning in the final?", BOWL.split(". ")[1]) == "39 years"
    assert (
        read("Who did the Broncos defeat in the divisional round?", BOWL.split(". ")[0])
        == "Pittsburgh Steelers"
    )


def test_the_reader_gives_nothing_for_what_and_which_questions_or_a_tie():
    assert read("Which team lost?", BOWL) is None
    assert read("What happened in the divisional round?", BOWL) is None
    assert read("Who greeted?", "Ann Lee greeted Bo Chan.") is None  # two names, equally near


def test_names_keep_initials_and_particles_and_drop_a_leading_determiner():
    assert read("Who led the committee?", "It was led by Nicholas E. Golovin.") == "Nicholas E. Golovin"
    assert read("Who wrote it?", "It was written by Muhammad ibn Musa, in Baghdad.") == "Muhammad ibn Musa"
    assert read("Who came first?", "The Normans came first.") is None  # "The Normans" is no name


def test_two_candidates_in_the_best_sentence_give_no_short_line():
    assert read("When did it open?", "It opened in 1835 and closed in 1901.") is None
    assert read("Who won?", "Ann Lee beat Bo Chan in the final.") is None


def test_how_many_noun_wants_that_noun_beside_the_number():
    assert read("How many points did they score?", "They scored 24 points this season.") == "24 points"
    assert read("How many tackles did he make?", "He led in tackles (118) this year.") == "118"
    assert read("How many men were sent?", "The fort was built in 1754 by 40 workers.") is None


def test_two_numbers_give_no_count_even_when_one_sits_beside_the_noun():
    assert read("How many points did they score?", "They scored 24 points in 3 quarters.") is None


@pytest.mark.parametrize(
    ("question", "text", "short"),
    [
        ("How many works are there?", "It holds more than 70,000 works of art.", "more than 70,000 works"),
        ("How many species are known?", "Only 100–150 species have been validated.", "100–150 species"),
        ("How many names were signed?", "A petition of over 5,100 names led to it.", "over 5,100 names"),
        ("When did he widen his target?", "In the summer of 1521, he widened his target.", "summer of 1521"),
        ("How long did it run?", "It ran from 1870 to 1939 in the garden.", None),  # years are no count
    ],
)
def test_a_short_line_keeps_what_qualifies_its_number(question, text, short):
    assert read(question, text) == short


def test_a_number_that_labels_a_name_is_not_a_count():
    assert read("How old was he?", "He was 39 years old at Super Bowl 50.") == "39 years"


def test_the_number_of_a_list_item_is_no_answer():
    assert read("How long does the dough rest?", "4. Shape the dough and proof it overnight.") is None
    assert read("How long does it rest?", "(1) Let it rest for 30 minutes.") == "30 minutes"


def test_a_name_a_page_wrapped_is_read_on_one_line():
    assert read("Who built the tower?", "It was designed by Henry\nWinstanley in 1696.") == "Henry Winstanley"


def test_a_short_line_must_occur_in_the_quoted_evidence():
    quoted = [Sentence("Ann Lee led the team.", 0, 0)]
    assert checked(Short("Ann Lee", quoted[0]), quoted) is not None
    assert checked(Short("Kim Park", quoted[0]), quoted) is None


# -- the pipeline ------------------------------------------------------------------------------
@pytest.fixture
def bowl_index(tmp_path, isolated_home, monkeypatch) -> Path:
    fake = HashEmbedder(dimension=512)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bowl.txt").write_text(BOWL)
    (root / "tea.txt").write_text("Green tea is steamed or pan fired soon after picking.")
    ingest(isolated_home, [root], embedder=fake, group="medium", chunking=ChunkSettings("sentence", 3, 0))
    return isolated_home


BM25 = AskOptions(query=QueryOptions(mode="bm25", top_k=3), answer_style="evidence")


def test_evidence_answers_without_the_model(bowl_index):
    model = EchoGenerator()
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        items = list(asker.stream("Who lost to the Broncos in the divisional round?", BM25))
    answer = items[-1]
    assert items[0] == answer.text and not answer.abstained and model.calls == []
    assert "Pittsburgh Steelers" in answer.text and answer.source(1).path.endswith("bowl.txt")


def test_evidence_abstains_when_evidence_is_weak(bowl_index):
    with Asker(bowl_index, settings=load_settings(), generator=EchoGenerator()) as asker:
        answer = asker.ask("When did the Broncos sign a new coach from Mongolia?", BM25)
    assert answer.abstained and answer.text == NOT_FOUND and answer.citations == ()


@pytest.mark.parametrize("old", ["extractive", "sentence", "choice"])
def test_old_style_names_are_taken_as_evidence(bowl_index, old):
    model = EchoGenerator()
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        answer = asker.ask(
            "Who lost to the Broncos in the divisional round?", replace(BM25, answer_style=old)
        )
    assert answer.model == "evidence" and model.calls == []


def test_unknown_answer_style_is_a_usage_error(bowl_index):
    with Asker(bowl_index, settings=load_settings(), generator=EchoGenerator()) as asker:
        with pytest.raises(UsageError, match="answer style"):
            asker.ask("Who lost to the Broncos?", replace(BM25, answer_style="poem"))


def test_each_row_of_a_table_is_a_sentence_of_its_own():
    """A long row is no wrapped line of prose: the readers write one row a line, cells joined by
    " | ", and a row quoted alone must not run into the next."""
    rows = [
        "Mount Everest | 8,849 | 1953 | Edmund Hillary and Tenzing Norgay",
        "K2 | 8,611 | 1954 | Achille Compagnoni and Lino Lacedelli",
        "Kangchenjunga | 8,586 | 1955 | George Band and Joe Brown",
    ]
    text = "The table lists the highest peaks.\n\nMountain | Height (m) | First ascent\n" + "\n".join(rows)
    assert [text[a:b] for a, b in sentence_spans(text)][2:] == rows


def test_a_heading_at_the_top_of_a_page_is_no_wrapped_line():
    """A PDF page's text follows the page break right after the last line of the page before,
    which is long: the heading is still a line of its own."""
    text = (
        "Smeaton's Tower stood for more than a century and was later rebuilt on Plymouth Hoe.\f"
        "The Fresnel Lens\nEarly lighthouses used open fires."
    )
    pieces = [text[a:b] for a, b in sentence_spans(text)]
    assert pieces[-2:] == ["The Fresnel Lens", "Early lighthouses used open fires."]
