"""Evaluation metrics against values computed by hand (retrieval) and SQuAD v1.1's definitions."""

from __future__ import annotations

import math

import pytest

from ragcli.evaluation.metrics import (
    answer_in_output,
    context_recall,
    exact_match,
    f1,
    floor_failures,
    normalize_answer,
    retrieval_metrics,
)

LOG2_3 = math.log2(3)

# q1: relevant d1, d2; ranked d1 (hit), d3 (miss), d2 (hit).
# q2: relevant d5; ranked d4 (miss), d5 (hit).
QRELS = {"q1": {"d1": 1, "d2": 1}, "q2": {"d5": 1}}
RUN = {"q1": {"d1": 0.9, "d3": 0.8, "d2": 0.7}, "q2": {"d4": 0.5, "d5": 0.4}}


def test_retrieval_metrics_match_hand_computation():
    # nDCG@10 q1 = (1/log2 2 + 1/log2 4) / (1/log2 2 + 1/log2 3); q2 = (1/log2 3) / 1.
    ndcg_q1 = (1 + 0.5) / (1 + 1 / LOG2_3)
    ndcg_q2 = 1 / LOG2_3
    metrics = retrieval_metrics(QRELS, RUN)
    assert metrics["ndcg@10"] == pytest.approx((ndcg_q1 + ndcg_q2) / 2)
    assert metrics["recall@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert metrics["recall@5"] == pytest.approx(1.0)
    assert metrics["recall@100"] == pytest.approx(1.0)
    assert metrics["mrr@10"] == pytest.approx((1 + 0.5) / 2)
    # AP q1 = (1/1 + 2/3) / 2 ; AP q2 = 1/2.
    assert metrics["map@100"] == pytest.approx(((1 + 2 / 3) / 2 + 0.5) / 2)


def test_graded_relevance_uses_linear_gains_like_trec_eval():
    # Relevance 2 ranked second: DCG = 1/1 + 2/log2(3); ideal = 2/1 + 1/log2(3).
    metrics = retrieval_metrics({"q": {"a": 2, "b": 1}}, {"q": {"b": 2.0, "a": 1.0}}, ["ndcg@10"])
    assert metrics["ndcg@10"] == pytest.approx((1 + 2 / LOG2_3) / (2 + 1 / LOG2_3))


def test_unretrieved_judged_query_counts_as_zero_and_unjudged_query_is_left_out():
    qrels = {**QRELS, "q3": {"d9": 1}, "q4": {"d8": 0}}
    metrics = retrieval_metrics(qrels, RUN, ["mrr@10"])
    assert metrics["mrr@10"] == pytest.approx((1 + 0.5 + 0) / 3)


def test_mrr_is_cut_at_ten():
    run = {"q": {f"x{i}": 100.0 - i for i in range(10)} | {"rel": 1.0}}
    assert retrieval_metrics({"q": {"rel": 1}}, run, ["mrr@10"])["mrr@10"] == 0.0


def test_no_judged_query_gives_zeros():
    assert retrieval_metrics({}, {}, ["ndcg@10"]) == {"ndcg@10": 0.0}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Cat sat.", "cat sat"),
        ("  an  apple, a pear & THE plum!", "apple pear plum"),
        ("théâtre (Paris)", "théâtre paris"),
        ("Anthem", "anthem"),  # "an" is removed only as a whole word
    ],
)
def test_normalize_answer_follows_squad(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_is_best_over_gold_answers():
    assert exact_match("the Eiffel Tower.", ["Louvre", "Eiffel tower"]) == 1.0
    assert exact_match("Eiffel Tower in Paris", ["Eiffel Tower"]) == 0.0
    assert exact_match("anything", []) == 0.0


def test_f1_matches_squad_token_overlap():
    # prediction "paris france" vs gold "paris": precision 1/2, recall 1 -> 2/3.
    assert f1("Paris, France", ["Paris"]) == pytest.approx(2 / 3)
    # best over golds: "the 1889 World's Fair" vs "1889 world's fair" -> identical after normalisation.
    assert f1("in the 1889 World's Fair", ["Eiffel", "the 1889 World's Fair"]) == pytest.approx(
        2 * 1 * 0.75 / 1.75
    )
    assert f1("no overlap here", ["Paris"]) == 0.0
    # Repeated tokens count once per occurrence (Counter intersection).
    assert f1("paris paris", ["paris"]) == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_answer_in_output_needs_whole_words():
    assert answer_in_output("It was Alexander Fleming [1].", ["alexander fleming"]) == 1.0
    assert answer_in_output("Flemingway", ["Fleming"]) == 0.0
    assert answer_in_output("I could not find this.", []) == 0.0


def test_context_recall_is_share_of_gold_tokens_in_context():
    assert context_recall("Fleming noticed the mould", ["Alexander Fleming"]) == pytest.approx(0.5)
    assert context_recall("Alexander Fleming noticed", ["Fleming", "Howard Florey"]) == 1.0
    assert context_recall("", ["Fleming"]) == 0.0


def test_floor_failures_name_metric_value_and_floor():
    failures = floor_failures(
        [("bm25", {"ndcg@10": 0.5, "mrr@10": 0.9}), ("dense", {"ndcg@10": 0.7})], {"ndcg@10": 0.6}
    )
    assert failures == ["bm25: ndcg@10 = 0.5000 is below the floor 0.6"]
