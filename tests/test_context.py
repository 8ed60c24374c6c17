"""Context building: dedupe, Lucina-style merging, numbering, the token budget; and prompting."""

from __future__ import annotations

import pytest

from ragcli.answer.context import ContextTooSmall, Source, build_context, context_budget, dedupe, merge_texts
from ragcli.generation.llama import TEMPLATE_MARGIN
from ragcli.answer.prompting import cited_prompt, parse_citations, says_not_found, strip_invalid_citations
from ragcli.types import Chunk, Hit

DOC = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota. Kappa lambda mu. Nu xi omicron."


def hit(chunk_id, start, end, score, *, doc_id=1, order=None, path="a.md", page=None, text=None):
    chunk = Chunk(
        chunk_id,
        doc_id,
        "medium",
        chunk_id if order is None else order,
        text if text is not None else DOC[start:end],
        start,
        end,
        page,
        path,
    )
    return Hit(chunk, score)


def words(text: str) -> int:
    return len(text.split())


def test_overlapping_chunks_merge_in_document_order_with_the_overlap_once():
    # Windows [0, 36) and [18, 54) overlap on "Delta epsilon zeta."; the better one comes second.
    first, second = hit(1, 0, 36, 0.5), hit(2, 18, 54, 0.9)
    sources = build_context([second, first], budget=1000, count_tokens=words)
    assert len(sources) == 1
    assert sources[0].text == DOC[0:54]
    assert sources[0].chunk_ids == (1, 2) and sources[0].score == 0.9


def test_consecutive_orders_merge_even_with_a_gap_between_offsets():
    run = [hit(1, 0, 17, 0.4, order=0), hit(2, 38, 53, 0.3, order=1)]
    assert merge_texts(run) == "Alpha beta gamma.\nEta theta iota."


def test_chunks_of_other_documents_or_far_apart_stay_separate_and_numbered_by_score():
    hits = [
        hit(1, 0, 17, 0.2),
        hit(5, 55, 71, 0.8, order=5),
        hit(9, 0, 17, 0.5, doc_id=2, path="b.md", text="Other text here."),
    ]
    sources = build_context(hits, budget=1000, count_tokens=words)
    assert [(s.number, s.chunk_ids) for s in sources] == [(1, (5,)), (2, (9,)), (3, (1,))]


def test_duplicate_texts_are_one_source_keeping_the_best_copy():
    a = hit(1, 0, 17, 0.3)
    b = hit(7, 0, 17, 0.6, doc_id=3, path="copy.md", text="Alpha  beta\ngamma.")
    assert [h.chunk.id for h in dedupe([a, b, a])] == [7]
    assert [s.path for s in build_context([a, b], budget=100, count_tokens=words)] == ["copy.md"]


def test_budget_keeps_best_sources_that_fit_and_skips_ones_that_do_not():
    big = hit(1, 0, 0, 0.9, text="word " * 50)
    small = hit(2, 0, 0, 0.5, doc_id=2, path="b.md", text="short one")
    sources = build_context([big, small], budget=30, count_tokens=words)
    assert [s.path for s in sources] == ["b.md"] and sources[0].number == 1


def test_a_merged_source_too_big_falls_back_to_its_best_chunk():
    first, second = hit(1, 0, 36, 0.5), hit(2, 18, 54, 0.9)
    cost_of_second = words(DOC[18:54]) + words("[99] a.md") + 2
    sources = build_context([first, second], budget=cost_of_second, count_tokens=words)
    assert sources[0].chunk_ids == (2,) and sources[0].text == DOC[18:54]


def test_nothing_fits_is_one_clear_error():
    with pytest.raises(ContextTooSmall, match="raise --ctx"):
        build_context([hit(1, 0, 0, 0.9, text="word " * 50)], budget=10, count_tokens=words)


def test_no_hits_make_no_sources_and_max_sources_caps():
    assert build_context([], budget=10, count_tokens=words) == []
    hits = [hit(i, 0, 0, 1.0 / i, doc_id=i, text=f"text {i}") for i in range(1, 6)]
    assert len(build_context(hits, budget=1000, count_tokens=words, max_sources=2)) == 2


def test_context_budget_subtracts_answer_prompt_and_margin():
    assert context_budget(2048, 256, 100) == 2048 - 256 - 100 - TEMPLATE_MARGIN


def test_page_and_header():
    source = Source(2, "doc.pdf", 3, 0.5, "text", (4,))
    assert source.header() == "[2] doc.pdf, page 3"
    assert Source(1, "a.md", None, 0.5, "t", ()).header() == "[1] a.md"


def test_prompt_numbers_sources_and_asks_to_cite_and_abstain():
    messages = cited_prompt("Why?", [Source(1, "a.md", None, 1.0, "Because.", (1,))])
    assert "[1] a.md\nBecause." in messages[-1]["content"] and "Question: Why?" in messages[-1]["content"]
    assert "[1]" in messages[0]["content"] and "could not find" in messages[0]["content"]


def test_citations_parse_and_invalid_ones_are_dropped():
    text = "Paris [1]. Lyon [2, 7]. Again [1]. Nope [9]."
    assert parse_citations(text, 3) == ((1, 2), (7, 9))
    assert strip_invalid_citations(text, 3) == "Paris [1]. Lyon [2]. Again [1]. Nope ."


@pytest.mark.parametrize(
    "text, declined",
    [
        ("I could not find this in your documents.", True),
        ("The sources do not contain information about Mars.", True),
        ("", True),
        ("Sourdough needs flour [1]. The sources do not mention rye.", False),
        ("Not found.", True),
    ],
)
def test_declined_answers_are_detected(text, declined):
    assert says_not_found(text) is declined
