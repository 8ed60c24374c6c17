"""Evaluation metrics: retrieval metrics from ir-measures, answer metrics as SQuAD defines them.

Retrieval metrics are never computed here by hand. They come from ir-measures, whose default
provider chain runs nDCG, recall and AP through pytrec_eval (trec_eval's own C code, the
implementation BEIR, Anserini and the TREC tracks report with) and RR@10 through its MS MARCO
provider: pinned to pytrec_eval, RR@10 silently ignores the cut-off (a relevant document at rank
11 scores 1/11; tests/test_eval_metrics.py checks the cut).

Why not ranx (the other maintained choice, numba-compiled, also does fusion): on this kind of
machine (2 cores) `ranx.evaluate` spent 60 s compiling on first use and 11-15 s per process
afterwards loading its numba cache, for the same numbers; ir-measures with pytrec_eval imports and
evaluates in about 0.5 s. Fusion lives in `ragcli.retrieval.fusion`, so ranx's would go unused.

Answer metrics follow the official SQuAD v1.1 evaluation script (`evaluate-v1.1.py`,
https://rajpurkar.github.io/SQuAD-explorer/): `normalize_answer`, `exact_match_score`,
`f1_score` and `metric_max_over_ground_truths` there, reproduced below function for function.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterable, Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]

# Our metric names (the keys of `--json` and `--fail-under`) -> ir-measures measure names.
# MAP is AP@100: the run is cut at 100 documents per query, as BEIR's runs are, so AP@100 and
# trec_eval's uncut `map` are the same number on it; the name says the depth explicitly.
RETRIEVAL_MEASURES: Mapping[str, str] = {
    "ndcg@10": "nDCG@10",
    "recall@1": "R@1",
    "recall@5": "R@5",
    "recall@10": "R@10",
    "recall@100": "R@100",
    "mrr@10": "RR@10",
    "map@100": "AP@100",
}


def judged_queries(qrels: Qrels) -> list[str]:
    """Queries with at least one relevant (score > 0) judgment: the ones a metric can score."""
    return [qid for qid, judged in qrels.items() if any(score > 0 for score in judged.values())]


def retrieval_metrics(
    qrels: Qrels, run: Run, names: Sequence[str] = tuple(RETRIEVAL_MEASURES)
) -> dict[str, float]:
    """Mean retrieval metrics over the judged queries of `qrels` (trec_eval via ir-measures).

    A judged query missing from `run` (nothing retrieved) counts as 0, like `trec_eval -c`;
    queries without any relevant judgment are left out, since no ranking can score on them.

    Args:
        qrels: query id -> {document id: graded relevance}.
        run: query id -> {document id: score}; higher scores rank first.
        names: metric names, keys of `RETRIEVAL_MEASURES`.

    Returns:
        Metric name -> mean value (0.0 for every metric when no query is judged).
    """
    import ir_measures

    queries = judged_queries(qrels)
    if not queries:
        return {name: 0.0 for name in names}
    judged = {qid: {doc: int(rel) for doc, rel in qrels[qid].items()} for qid in queries}
    scored = {qid: {doc: float(s) for doc, s in run.get(qid, {}).items()} for qid in queries}
    measures = {ir_measures.parse_measure(RETRIEVAL_MEASURES[name]): name for name in names}
    totals = dict.fromkeys(names, 0.0)
    for metric in ir_measures.iter_calc(list(measures), judged, scored):
        totals[measures[metric.measure]] += metric.value
    return {name: total / len(queries) for name, total in totals.items()}


def normalize_answer(text: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (SQuAD v1.1)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


_PUNCTUATION = frozenset(string.punctuation)


def _f1_score(prediction: str, ground_truth: str) -> float:
    prediction_tokens = normalize_answer(prediction).split()
    truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(truth_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(prediction_tokens)
    recall = same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, ground_truths: Iterable[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer (SQuAD v1.1), else 0.0."""
    truths = [normalize_answer(truth) for truth in ground_truths]
    return float(bool(truths) and normalize_answer(prediction) in truths)


def f1(prediction: str, ground_truths: Iterable[str]) -> float:
    """Token F1 of the prediction against the best-matching gold answer (SQuAD v1.1)."""
    return max((_f1_score(prediction, truth) for truth in ground_truths), default=0.0)


def answer_in_output(output: str, ground_truths: Iterable[str]) -> float:
    """1.0 when a normalised gold answer occurs, on word boundaries, in the normalised output."""
    text = f" {normalize_answer(output)} "
    return float(any(f" {truth} " in text for truth in map(normalize_answer, ground_truths) if truth))


def context_recall(context: str, ground_truths: Iterable[str]) -> float:
    """Share of a gold answer's normalised tokens found in the context, best over gold answers.

    The non-LLM reading of ragas' context recall: could the retrieved context have supplied the
    answer at all? Token presence, not counts, so repeated words are not penalised.
    """
    present = set(normalize_answer(context).split())
    best = 0.0
    for truth in ground_truths:
        tokens = normalize_answer(truth).split()
        if tokens:
            best = max(best, sum(token in present for token in tokens) / len(tokens))
    return best


def floor_failures(
    results: Iterable[tuple[str, Mapping[str, float | None]]], floors: Mapping[str, float]
) -> list[str]:
    """One message per configuration metric below its floor (`--fail-under`); empty when all pass.

    Args:
        results: (configuration name, metric name -> value) pairs; None values are skipped.
        floors: metric name -> minimum value.
    """
    failures = []
    for name, metrics in results:
        for metric, floor in floors.items():
            value = metrics.get(metric)
            if value is not None and value < floor:
                failures.append(f"{name}: {metric} = {value:.4f} is below the floor {floor:g}")
    return failures
