"""Answer evaluation: per-answer scores, the summary keys, unanswerable questions, interruption."""

from __future__ import annotations

import shutil

import pytest

from ragcli.answer.options import AskOptions

from ragcli.answer.result import Answer
from ragcli.answer.context import Source
from ragcli.evaluation.answer_eval import (
    ANSWER_METRICS,
    answer_configurations,
    citation_validity,
    evaluate_answers,
    run_answers,
    score_answer,
    strip_citations,
    summarize,
)
from ragcli.evaluation.datasets import QACase
from ragcli.answer.support import SentenceSupport
from ragcli.types import Chunk, Hit

SOURCE_1 = Source(
    number=1,
    path="d06",
    page=None,
    score=1.0,
    chunk_ids=(11,),
    text="In 1928 Alexander Fleming noticed a mould that killed bacteria.",
)
SOURCE_2 = Source(
    number=2, path="d09", page=None, score=0.5, chunk_ids=(12,), text="Ada Lovelace wrote notes."
)


def retrieved(*ids: int) -> tuple[Hit, ...]:
    return tuple(
        Hit(
            chunk=Chunk(
                id=i, doc_id=i, group="medium", order=0, text="", start=0, end=0, page=None, path=f"d{i}"
            ),
            score=1.0,
        )
        for i in ids
    )


def answer(
    text: str,
    *,
    abstained=False,
    citations=(1,),
    invalid=(),
    support=(),
    sources=(SOURCE_1, SOURCE_2),
    hits=retrieved(11, 12),
    inferred=False,
) -> Answer:
    return Answer(
        question="q",
        text=text,
        abstained=abstained,
        sources=sources,
        citations=citations,
        invalid_citations=invalid,
        support=support,
        retrieved=hits,
        citations_inferred=inferred,
    )


FLEMING = QACase(id="a", question="Who noticed the mould?", answers=("Alexander Fleming", "Fleming"))
UNANSWERABLE = QACase(id="u", question="Who climbed it in winter?")


def test_strip_citations_before_scoring():
    assert strip_citations("Alexander Fleming [1], [2][1, 2].") == "Alexander Fleming , ."


def test_score_answerable_question():
    result = score_answer(FLEMING, answer("Alexander Fleming [1]."), seconds=2.0)
    assert (result.exact_match, result.f1, result.answer_in_output) == (1.0, 1.0, 1.0)
    assert result.context_recall == 1.0 and result.citation_validity == 1.0 and result.seconds == 2.0
    partial = score_answer(FLEMING, answer("It was Fleming in London [1]."), seconds=1.0)
    # "it was fleming in london" vs "fleming": precision 1/5, recall 1 -> F1 1/3.
    assert (
        partial.exact_match == 0.0 and partial.f1 == pytest.approx(1 / 3) and partial.answer_in_output == 1.0
    )


def test_unanswerable_question_scores_only_abstention():
    result = score_answer(
        UNANSWERABLE,
        answer("I could not find this in your documents.", abstained=True, citations=()),
        seconds=0.1,
    )
    assert result.abstained and not result.answerable
    assert result.exact_match is None and result.f1 is None and result.context_recall is None


def test_citation_validity_counts_invalid_and_unretrieved_sources():
    assert citation_validity(answer("x", citations=(1,), invalid=(7,))) == 0.5
    assert citation_validity(answer("x", citations=(1, 2), hits=retrieved(11))) == 0.5  # [2] not retrieved
    assert citation_validity(answer("x", citations=(1, 2), hits=())) == 1.0  # cached: existence only
    assert citation_validity(answer("x", citations=())) is None
    assert citation_validity(answer("x", citations=(1,), inferred=True)) is None


def test_summary_has_exactly_the_documented_keys_and_values():
    supported = (
        SentenceSupport("Alexander Fleming.", "supported", 0.9, 1),
        SentenceSupport("In Paris.", "unsupported", 0.0, None),
    )
    results = [
        score_answer(FLEMING, answer("Alexander Fleming [1].", support=supported), 1.0),
        score_answer(
            FLEMING, answer("I could not find this in your documents.", abstained=True, citations=()), 3.0
        ),
        score_answer(UNANSWERABLE, answer("I could not find this.", abstained=True, citations=()), 2.0),
        score_answer(UNANSWERABLE, answer("Sir Edmund [2].", citations=(2,)), 6.0),
    ]
    metrics = summarize(results)
    assert tuple(metrics) == ANSWER_METRICS
    assert metrics["exact_match"] == 0.5 and metrics["answer_in_output"] == 0.5
    assert metrics["supported"] == 0.5  # one annotated answer, one of its two sentences
    assert metrics["citation_validity"] == 1.0
    assert metrics["abstained"] == 0.5
    assert metrics["abstained_unanswerable"] == 0.5 and metrics["abstained_answerable"] == 0.5
    assert metrics["seconds_per_question"] == 3.0 and metrics["seconds_per_question_median"] == 2.5


def test_summary_of_only_unanswerable_questions_leaves_answer_metrics_empty():
    metrics = summarize([score_answer(UNANSWERABLE, answer("No.", abstained=True, citations=()), 1.0)])
    assert metrics["exact_match"] is None and metrics["abstained_unanswerable"] == 1.0
    assert metrics["abstained_answerable"] is None


class FakeAsker:
    def __init__(self, interrupt_after: int | None = None):
        self.calls = []
        self.interrupt_after = interrupt_after

    def ask(self, question, options):
        if self.interrupt_after is not None and len(self.calls) == self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append((question, options.query.mode))
        return answer("Alexander Fleming [1]." if options.query.mode == "bm25" else "Someone else [1].")


def test_run_compares_configurations_and_keeps_finished_questions_on_interrupt():
    configs = answer_configurations(["bm25", "dense"], base=AskOptions(use_cache=False))
    report = run_answers(FakeAsker(), [FLEMING, UNANSWERABLE], configs, limit=2)
    assert [r.name for r in report.configurations] == ["bm25", "dense"]
    assert report.configurations[0].metrics["exact_match"] == 1.0
    assert report.configurations[1].metrics["exact_match"] == 0.0
    assert report.to_dict()["configurations"][0]["metrics"].keys() == set(ANSWER_METRICS)
    interrupted = run_answers(FakeAsker(interrupt_after=3), [FLEMING, FLEMING, UNANSWERABLE], configs)
    assert interrupted.partial and interrupted.completed == 1
    assert all(len(r.cases) == 1 for r in interrupted.configurations)


def test_evaluate_answers_on_a_dataset_folder(tmp_path, fixtures_dir, monkeypatch):
    from fakes import EchoGenerator, HashEmbedder

    from ragcli.config import load_settings

    embedder = HashEmbedder()
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: embedder)
    folder = tmp_path / "mini-qa"
    folder.mkdir()
    shutil.copy(fixtures_dir / "beir-mini" / "corpus.jsonl", folder / "corpus.jsonl")
    shutil.copy(fixtures_dir / "beir-mini" / "qa-mini.jsonl", folder / "qa.jsonl")
    configs = answer_configurations(["bm25"], base=AskOptions(use_cache=False))
    report = evaluate_answers(
        folder, settings=load_settings(), configs=configs, limit=4, generator=EchoGenerator()
    )
    assert (
        report.questions == 4
        and report.completed == 4
        and report.index.startswith(str(load_settings().cache_dir / "eval" / "mini-qa-"))
    )
    metrics = report.configurations[0].metrics
    # The echo model answers with the top source's first sentence: the gold answer is often in it.
    assert metrics["context_recall"] > 0.5 and metrics["citation_validity"] == 1.0
    assert 0.0 <= metrics["f1"] <= 1.0


HOWTO = QACase(
    id="h",
    question="how do I notice a mould?",
    answers=("Look at the dish.",),
    relevant=("d06",),
    kind="procedure",
    must_contain=("Alexander  FLEMING", "mould"),
)
ABSENT = QACase(id="x", question="how do I use Docker?", kind="absent")


def test_must_contain_questions_score_answered_recall_gold_page_and_kinds():
    from ragcli.evaluation.answer_eval import AnswerConfigurationResult

    right = score_answer(HOWTO, answer('"In 1928 Alexander\nFleming noticed a mould." [1]'), 0.1)
    half = score_answer(HOWTO, answer("Fleming saw a mould [2].", citations=(2,)), 0.1)
    assert right.answered == 1.0 and right.must_contain_recall == 1.0 and right.gold_page_cited == 1.0
    assert half.answered == 0.0 and half.must_contain_recall == 0.5 and half.gold_page_cited == 0.0
    absent = score_answer(ABSENT, answer("I could not find this.", abstained=True, citations=()), 0.1)
    assert absent.answered is None and not absent.answerable
    result = AnswerConfigurationResult("hybrid", AskOptions(), [right, half, absent])
    assert result.metrics["answered"] == 0.5 and result.metrics["must_contain_recall"] == 0.75
    assert result.metrics["abstained_unanswerable"] == 1.0
    kinds = result.to_dict()["kinds"]
    assert kinds["procedure"]["answered"] == 0.5 and kinds["procedure"]["questions"] == 2
    assert kinds["absent"]["abstained"] == 1.0


def test_short_line_precision_counts_only_shown_short_lines():
    from dataclasses import replace as change

    shown_right = score_answer(FLEMING, change(answer("Fleming [1]"), short="Alexander Fleming"), 0.1)
    shown_wrong = score_answer(FLEMING, change(answer("Paris [1]"), short="Paris"), 0.1)
    none = score_answer(FLEMING, answer('"Alexander Fleming noticed it." [1]'), 0.1)
    metrics = summarize([shown_right, shown_wrong, none])
    assert metrics["short_precision"] == 0.5 and abs(metrics["short_shown"] - 2 / 3) < 1e-9


def test_supported_agreement_compares_full_support_with_correctness():
    good = (SentenceSupport("Alexander Fleming.", "supported", 0.9, 1),)
    right = score_answer(FLEMING, answer("Alexander Fleming [1].", support=good), 0.1)
    wrong_but_supported = score_answer(FLEMING, answer("Ada Lovelace [2].", support=good), 0.1)
    assert summarize([right, wrong_but_supported])["supported_agreement"] == 0.5


def test_a_qa_file_beside_a_documents_folder_is_answered_over_it(tmp_path):
    from ragcli.evaluation.datasets import load_qa_set

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("Alexander Fleming noticed a mould.\n")
    qa = tmp_path / "qa-tune.jsonl"
    qa.write_text(
        '{"_id": "1", "question": "who?", "kind": "factoid", "must_contain": ["Fleming"], '
        '"answer": "Fleming did.", "relevant": ["a.md"]}\n'
        '{"_id": "2", "question": "docker?", "kind": "absent", "must_contain": [], "answer": "", '
        '"relevant": []}\n'
    )
    dataset = load_qa_set(qa)
    assert dataset.corpus == tmp_path / "corpus" and dataset.source == tmp_path
    assert [case.answerable for case in dataset.cases] == [True, False]
    assert dataset.cases[0].must_contain == ("Fleming",) and dataset.cases[1].kind == "absent"
