"""LLM retrieval: the model picks passages among candidates; its answer is parsed leniently."""

from __future__ import annotations

import pytest
from fakes import ScriptedGenerator, hits_for

from ragcli.retrieval.model_select import (
    SELECTION_GRAMMAR,
    build_messages,
    parse_selection,
    select,
    truncate_to_tokens,
)
from ragcli.types import Hit

TEXTS = [
    "The Eiffel Tower is in Paris and was finished in 1889.",
    "Octopuses have three hearts and blue blood.",
    "Paris is the capital of France.",
    "Photosynthesis turns light into chemical energy.",
    "Le café de Flore est à Paris.",
    "巴黎是法国的首都。",
]


def make_hits(texts=TEXTS) -> list[Hit]:
    return hits_for(texts)


@pytest.mark.parametrize(
    "reply, count, expected",
    [
        ("3, 1", 5, [2, 0]),
        ("[1, 4]", 5, [0, 3]),
        ("Passages 2 and 3", 5, [1, 2]),
        ("The relevant passages are: 2-4.", 5, [1, 2, 3]),
        ("2 to 3", 5, [1, 2]),
        ("4-2", 5, [3, 2, 1]),
        ("1-1000", 3, [0, 1, 2]),
        ("1, 1, 2, 1", 5, [0, 1]),
        ("0, 6, 2, 99", 5, [1]),
        ("Passage 2 (from 2019)", 5, [1]),
        ("7, 9", 5, []),
        ("", 5, []),
        ("I think none of them, sorry!", 5, []),
        ("\u00bfQu\u00e9? \U0001f914", 5, []),
    ],
)
def test_parse_selection_is_lenient(reply, count, expected):
    assert parse_selection(reply, count) == expected


@pytest.mark.parametrize(
    "reply, expected_ids, selected",
    [
        # fewer chosen than top_k: the rest follow the candidates' own order, without "llm"
        ("3, 1", [102, 100, 101], 2),
        ("[1, 4]", [100, 103, 101], 2),
        ("Passages 2 and 3", [101, 102, 100], 2),
        ("5, 5, 5, 2", [104, 101, 100], 2),
        ("1, 2, 3, 4, 5, 6", [100, 101, 102], 3),  # cut to top_k in the model's order
        ("garbage", [100, 101, 102], 0),
        ("", [100, 101, 102], 0),
        ("7, 12, 40", [100, 101, 102], 0),
        ("0", [100, 101, 102], 0),
    ],
)
def test_select_follows_the_model_or_falls_back(reply, expected_ids, selected):
    hits = make_hits()
    chosen = select("Where is Paris?", hits, ScriptedGenerator([reply]), top_k=3)

    assert [hit.chunk.id for hit in chosen] == expected_ids
    assert [hit.rank for hit in chosen] == list(range(1, len(chosen) + 1))
    assert ["llm" in hit.sources for hit in chosen] == [True] * selected + [False] * (3 - selected)
    assert all("bm25" in hit.sources for hit in chosen)  # first-stage evidence kept


def test_select_marks_rank_and_score_and_keeps_other_sources():
    hits = make_hits()
    chosen = select("capital of France", hits, ScriptedGenerator(["3, 6"]), top_k=2)

    assert [hit.chunk.id for hit in chosen] == [102, 105]
    assert chosen[0].sources["llm"] == {"rank": 1, "score": 1.0}
    assert chosen[1].sources["llm"] == {"rank": 2, "score": 0.5}
    assert [hit.score for hit in chosen] == [1.0, 0.5]
    assert chosen[1].sources["bm25"] == hits[5].sources["bm25"]


def test_select_prompt_numbers_passages_and_constrains_the_answer():
    generator = ScriptedGenerator(["1"])
    select("Where is Paris?", make_hits(), generator, top_k=2)

    (call,) = generator.calls
    prompt = call["messages"][-1]["content"]
    assert call["grammar"] == SELECTION_GRAMMAR
    assert "Where is Paris?" in prompt
    for number, text in enumerate(TEXTS, 1):
        assert f"[{number}] {text}" in prompt
    assert call["max_tokens"] >= 8


def test_select_with_no_candidates_does_not_call_the_model():
    generator = ScriptedGenerator(["1"])
    assert select("anything", [], generator, top_k=3) == []
    assert generator.calls == []


def test_prompt_fits_a_small_context_and_unshown_passages_cannot_be_chosen():
    long_texts = [f"passage {index} " + "word " * 400 for index in range(20)]
    generator = ScriptedGenerator(["20, 2"], n_ctx=512)
    chosen = select("which passage?", make_hits(long_texts), generator, top_k=5)

    (call,) = generator.calls
    rendered = " ".join(message["content"] for message in call["messages"])
    assert generator.count_tokens(rendered) + call["max_tokens"] <= generator.n_ctx
    assert "[20]" not in rendered  # twenty excerpts do not fit in 512 tokens
    assert [hit.chunk.id for hit in chosen][:1] == [101] and "llm" not in chosen[1].sources


def test_truncate_to_tokens_cuts_at_a_word_boundary():
    count = ScriptedGenerator([""]).count_tokens
    text = "alpha beta gamma delta epsilon zeta eta theta"

    assert truncate_to_tokens(text, 100, count) is text
    cut = truncate_to_tokens(text, 3, count)
    assert count(cut) <= 3 and text.startswith(cut) and cut.split() == text.split()[: len(cut.split())]
    assert truncate_to_tokens(text, 0, count) == ""


def test_build_messages_shape():
    messages = build_messages("q?", ["first", "second"])
    assert [message["role"] for message in messages] == ["system", "user"]
    assert "[1] first\n[2] second" in messages[1]["content"]


@pytest.mark.model
def test_select_with_the_real_gguf_model():
    """SmolLM2-135M under the grammar: whatever it answers, the result is a clean ranked subset."""
    from ragcli.config import load_settings
    from ragcli.generation.llama import load_generator

    generator = load_generator(None, load_settings(), n_ctx=512, threads=2)
    hits = make_hits(TEXTS[:4])
    chosen = select("What is the capital of France?", hits, generator, top_k=2)

    assert len(chosen) == 2  # never fewer than top_k while candidates remain
    ids = [hit.chunk.id for hit in chosen]
    assert len(set(ids)) == len(ids) and set(ids) <= {hit.chunk.id for hit in hits}
    assert [hit.rank for hit in chosen] == [1, 2][: len(chosen)]
    assert all(hit.sources.get("llm", {"rank": hit.rank})["rank"] == hit.rank for hit in chosen)
