"""Abstention of the evidence answer: the asker's own words ("I", "my") are not required of the
quoted sentences, while a word no page of the index holds still is (`covers_question`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ingested_pages
from ragcli.analysis import analyze
from ragcli.answer.evidence import answer_with_evidence
from ragcli.answer.sentences import index_held_terms
from ragcli.types import Chunk, Hit

# The saddle page explains setting its height and tilt over several sentences, none of which
# holds most of a question's words, and none says "I" or "my".
SADDLE = (
    "# Saddle\n\nLoosen the clamp under the saddle to move it. Raise it until the height suits you. "
    "Tilt the saddle a little forward for long rides. Tighten the clamp again to adjust it for good.\n"
)
PAGES = {
    "saddle.md": SADDLE,
    "brakes.md": "# Brakes\n\nSqueeze both levers gently to stop. Replace the pads when they squeal.\n",
}
TOOL_QUESTION = "how do I adjust the saddle height and tilt using a zipwrench?"


def hit(text: str) -> Hit:
    return Hit(Chunk(1, 1, "medium", 0, text, 0, len(text), None, "saddle.md"), 1.0, 1, {})


def test_a_question_in_the_first_person_is_answered_from_sentences_that_do_not_repeat_it():
    found = answer_with_evidence("how do I set my saddle height?", [hit(SADDLE)])
    assert not found.abstained
    assert '"Raise it until the height suits you." [1]' in found.text


def test_a_word_no_page_of_the_index_holds_makes_the_answer_abstain():
    assert not answer_with_evidence(TOOL_QUESTION, [hit(SADDLE)]).abstained
    assert answer_with_evidence(
        TOOL_QUESTION, [hit(SADDLE)], unheld=frozenset(analyze("zipwrench"))
    ).abstained


@pytest.fixture(scope="module")
def env(tmp_path_factory, model_cache_dir) -> dict[str, str]:
    return ingested_pages(tmp_path_factory, model_cache_dir, "abstention", PAGES)


def test_the_words_no_page_holds_are_read_from_the_index(env):
    from ragcli.store.chooser import open_backend

    backend = open_backend(Path(env["RAG_INDEX"]))
    try:
        group = next(iter(backend.groups()))
        _, unheld = index_held_terms(TOOL_QUESTION, backend.lexical(group).term_shares)
    finally:
        backend.close()
    assert unheld == frozenset(analyze("I using zipwrench"))  # the pages say none of these
