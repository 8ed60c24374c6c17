"""Answer evaluation: ask every question per configuration and score the answers.

Per question (`score_answer`), then averaged per configuration (`summarize`):

- ``exact_match``, ``f1``: SQuAD v1.1 normalised, best over the gold answers; answerable
  questions only; on the *short answer* (`Answer.short`) when the answer shows one, else on
  the whole text. Citation markers (``[1]``) are removed from the answer first.
- ``answer_in_output``: a normalised gold answer occurs in the normalised full text a user
  sees (short answer and quoted evidence; answerable).
- ``citation_validity``: of the sources the model cited, the share that exist and were
  retrieved; answers citing nothing are left out (inferred citations are not the model's).
- ``supported``: share of the answer's sentences the support annotation labels "supported";
  answers that abstained or have no sentences are left out.
- ``context_recall``: share of a gold answer's tokens present in the context the model was
  given, best over gold answers (ragas' context recall without an LLM); answerable only.
- ``abstained``: share of all questions answered "not found"; ``abstained_unanswerable``
  (questions with no gold answer, where abstaining is right) and ``abstained_answerable``.
- ``seconds_per_question`` (mean) and ``seconds_per_question_median``: wall clock per ask.

For sets of real questions whose records carry ``must_contain`` strings (docs-qa's layout):

- ``answered``: every must-contain string occurs in the answer text (case-insensitive,
  whitespace collapsed) and the answer did not abstain; ``must_contain_recall``: the share of
  them found. Both over questions with such strings.
- ``gold_page_cited``: a cited source is one of the question's ``relevant`` documents (the
  indexed path ends with the entry); questions with ``relevant`` entries that did not abstain.

For every set:

- ``short_shown``: share of answerable questions whose answer shows a short line;
  ``short_precision``: of those, the share whose short line is right (exact match, or it
  holds a gold answer; must-contain sets: holds a must-contain string).
- ``supported_agreement``: over answers with a support annotation, how often "every sentence
  is supported" agrees with the answer being correct (answered / answer in output).

`kinds` (`AnswerConfigurationResult.kind_metrics`) breaks the answered share, must-contain
recall, gold page cited and abstention down per question kind.

A metric with no question to average over is None (``null`` in JSON).
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, Sequence

from ragcli.evaluation.datasets import QACase
from ragcli.evaluation.metrics import answer_in_output, context_recall, exact_match, f1
from ragcli.evaluation.retrieval_eval import mode_rerank_grid
from ragcli.types import Progress

if TYPE_CHECKING:
    from ragcli.answer.options import AskOptions
    from ragcli.answer.result import Answer
    from ragcli.config import Settings
    from ragcli.generation.llama import Generator

ANSWER_METRICS = (
    "exact_match",
    "f1",
    "answer_in_output",
    "citation_validity",
    "supported",
    "context_recall",
    "abstained",
    "abstained_unanswerable",
    "abstained_answerable",
    "answered",
    "must_contain_recall",
    "gold_page_cited",
    "short_shown",
    "short_precision",
    "supported_agreement",
    "seconds_per_question",
    "seconds_per_question_median",
)
# The per-kind breakdown of a set whose questions have kinds.
KIND_METRICS = ("questions", "answered", "must_contain_recall", "gold_page_cited", "abstained")
_CITATION = re.compile(r"\[\s*\d+(?:\s*,\s*\d+)*\s*\]")


class AskerLike(Protocol):
    """What evaluation needs of `ragcli.answer.ask.Asker`."""

    def ask(self, question: str, options: AskOptions) -> Answer: ...


@dataclass(frozen=True)
class AnswerConfiguration:
    """One answering setup: a display name and the `AskOptions` it runs with."""

    name: str
    options: AskOptions


def answer_configurations(
    modes: Sequence[str], reranks: Sequence[str | None] = (None,), *, base: AskOptions | None = None
) -> list[AnswerConfiguration]:
    """Every retrieval mode combined with every reranker, on top of `base` `AskOptions`."""
    if base is None:
        from ragcli.answer.options import AskOptions

        base = AskOptions(use_cache=False)
    return [
        AnswerConfiguration(name, replace(base, query=replace(base.query, mode=mode, rerank=rerank)))
        for name, mode, rerank in mode_rerank_grid(modes, reranks)
    ]


@dataclass(frozen=True)
class CaseResult:
    """One question's answer and its scores (None where a metric does not apply)."""

    id: str
    question: str
    answer: str
    answerable: bool
    abstained: bool
    seconds: float
    exact_match: float | None = None
    f1: float | None = None
    answer_in_output: float | None = None
    citation_validity: float | None = None
    supported: float | None = None
    context_recall: float | None = None
    kind: str = ""
    answered: float | None = None
    must_contain_recall: float | None = None
    gold_page_cited: float | None = None
    short_answer: str | None = None
    short_correct: float | None = None

    @property
    def correct(self) -> float | None:
        """Whether the answer is right: answered (must-contain sets), else answer in output."""
        return self.answered if self.answered is not None else self.answer_in_output


def collapse(text: str) -> str:
    """Lower-cased, whitespace collapsed: how must-contain strings are matched."""
    return " ".join(text.lower().split())


def must_contain_found(text: str, strings: Sequence[str]) -> list[bool]:
    """For each must-contain string, whether it occurs in `text` (case-insensitive, spaces collapsed)."""
    haystack = collapse(text)
    return [collapse(string) in haystack for string in strings]


def cites_relevant(answer: Answer, relevant: Sequence[str]) -> bool:
    """Whether a cited source is one of the `relevant` documents (path equal or ending in ``/entry``)."""
    paths = [s.path for n in answer.citations if (s := answer.source(n)) is not None]
    return any(path == entry or path.endswith("/" + entry) for path in paths for entry in relevant)


def strip_citations(text: str) -> str:
    """The answer without its ``[n]`` / ``[n, m]`` citation markers."""
    return " ".join(_CITATION.sub(" ", text).split())


def citation_validity(answer: Answer) -> float | None:
    """Share of the sources the model cited that exist and were retrieved; None if it cited none."""
    cited = [] if getattr(answer, "citations_inferred", False) else list(answer.citations)
    cited += list(getattr(answer, "invalid_citations", ()))
    if not cited:
        return None
    retrieved = {hit.chunk.id for hit in getattr(answer, "retrieved", ())}
    sources = {source.number: source for source in answer.sources}

    def valid(number: int) -> bool:
        source = sources.get(number)
        # Cached answers keep no retrieved hits; then existing is all that can be checked.
        return source is not None and (not retrieved or set(source.chunk_ids) <= retrieved)

    return sum(map(valid, cited)) / len(cited)


def supported_share(answer: Answer) -> float | None:
    """Share of the answer's sentences labelled "supported"; None for abstentions or no sentences."""
    if answer.abstained or not answer.support:
        return None
    return sum(item.label == "supported" for item in answer.support) / len(answer.support)


def score_answer(case: QACase, answer: Answer, seconds: float) -> CaseResult:
    """Score one `Answer` against one question's gold answers."""
    text = strip_citations(answer.text)
    short = getattr(answer, "short", None)
    short = strip_citations(short) if short else text
    scores: dict[str, float | None] = {
        "citation_validity": citation_validity(answer),
        "supported": supported_share(answer),
    }
    if case.answerable:
        context = "\n".join(source.text for source in answer.sources)
        golds = case.answers or case.must_contain
        scores.update(
            exact_match=exact_match(short, golds),
            f1=f1(short, golds),
            answer_in_output=answer_in_output(text, golds),
            context_recall=context_recall(context, golds),
        )
        scores.update(_short_scores(case, getattr(answer, "short", None)))
    if case.must_contain:
        found = must_contain_found(text, case.must_contain)
        scores["must_contain_recall"] = sum(found) / len(found)
        scores["answered"] = float(all(found) and not answer.abstained)
    if case.relevant and case.answerable and not answer.abstained:
        scores["gold_page_cited"] = float(cites_relevant(answer, case.relevant))
    return CaseResult(
        id=case.id,
        question=case.question,
        answer=answer.text,
        answerable=case.answerable,
        abstained=bool(answer.abstained),
        seconds=seconds,
        kind=case.kind,
        **scores,
    )


def _short_scores(case: QACase, short: str | None) -> dict[str, Any]:
    """The short line shown (if any) and whether it is right."""
    if not short:
        return {}
    short = strip_citations(short)
    if case.answers:
        right = exact_match(short, case.answers) or answer_in_output(short, case.answers)
    else:
        right = any(must_contain_found(short, case.must_contain))
    return {"short_answer": short, "short_correct": float(right)}


def _agreement(results: Sequence[CaseResult]) -> float | None:
    """How often "every sentence supported" agrees with the answer being correct."""
    pairs = [
        (r.supported == 1.0, bool(r.correct))
        for r in results
        if r.answerable and r.supported is not None and r.correct is not None
    ]
    return statistics.fmean(a == b for a, b in pairs) if pairs else None


def _mean(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.fmean(present) if present else None


def summarize(results: Sequence[CaseResult]) -> dict[str, float | None]:
    """The configuration's metrics (`ANSWER_METRICS`) over its scored questions."""
    answerable = [r for r in results if r.answerable]
    unanswerable = [r for r in results if not r.answerable]
    seconds = [r.seconds for r in results]
    return {
        "exact_match": _mean(r.exact_match for r in answerable),
        "f1": _mean(r.f1 for r in answerable),
        "answer_in_output": _mean(r.answer_in_output for r in answerable),
        "citation_validity": _mean(r.citation_validity for r in results),
        "supported": _mean(r.supported for r in results),
        "context_recall": _mean(r.context_recall for r in answerable),
        "abstained": _mean(float(r.abstained) for r in results),
        "abstained_unanswerable": _mean(float(r.abstained) for r in unanswerable),
        "abstained_answerable": _mean(float(r.abstained) for r in answerable),
        "answered": _mean(r.answered for r in answerable),
        "must_contain_recall": _mean(r.must_contain_recall for r in answerable),
        "gold_page_cited": _mean(r.gold_page_cited for r in answerable),
        "short_shown": _mean(float(r.short_answer is not None) for r in answerable),
        "short_precision": _mean(r.short_correct for r in answerable),
        "supported_agreement": _agreement(results),
        "seconds_per_question": statistics.fmean(seconds) if seconds else None,
        "seconds_per_question_median": statistics.median(seconds) if seconds else None,
    }


@dataclass
class AnswerConfigurationResult:
    """One configuration's per-question results and their summary."""

    name: str
    options: AskOptions
    cases: list[CaseResult] = field(default_factory=list)

    @property
    def metrics(self) -> dict[str, float | None]:
        return summarize(self.cases)

    def kind_metrics(self) -> dict[str, dict[str, float | None]]:
        """Per question kind (sets whose questions have one): `KIND_METRICS`."""
        kinds: dict[str, list[CaseResult]] = {}
        for case in self.cases:
            if case.kind:
                kinds.setdefault(case.kind, []).append(case)
        return {
            kind: {
                "questions": len(cases),
                "answered": _mean(c.answered for c in cases),
                "must_contain_recall": _mean(c.must_contain_recall for c in cases),
                "gold_page_cited": _mean(c.gold_page_cited for c in cases),
                "abstained": _mean(float(c.abstained) for c in cases),
            }
            for kind, cases in kinds.items()
        }

    def to_dict(self, details: bool = False) -> dict[str, Any]:
        query = self.options.query
        record: dict[str, Any] = {
            "name": self.name,
            "mode": query.mode,
            "rerank": query.rerank,
            "top_k": query.top_k,
            "metrics": {k: None if v is None else round(v, 4) for k, v in self.metrics.items()},
            "kinds": {
                kind: {k: None if v is None else round(v, 4) for k, v in values.items()}
                for kind, values in self.kind_metrics().items()
            },
        }
        if details:
            record["questions"] = [vars(case) for case in self.cases]
        return record


@dataclass
class AnswerReport:
    """The result of `run_answers`."""

    dataset: str
    index: str
    questions: int
    answerable: int = 0
    completed: int = 0
    partial: bool = False
    configurations: list[AnswerConfigurationResult] = field(default_factory=list)
    # distinct `relevant` entries of the questions, and how many of them the index holds
    relevant_listed: int = 0
    relevant_indexed: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self, details: bool = False) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "index": self.index,
            "questions": self.questions,
            "answerable": self.answerable,
            "completed": self.completed,
            "partial": self.partial,
            "relevant_listed": self.relevant_listed,
            "relevant_indexed": self.relevant_indexed,
            "warnings": self.warnings,
            "metric_names": list(ANSWER_METRICS),
            "configurations": [result.to_dict(details) for result in self.configurations],
        }


def run_answers(
    asker: AskerLike,
    cases: Sequence[QACase],
    configs: Sequence[AnswerConfiguration],
    *,
    dataset: str = "",
    index: str = "",
    limit: int | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> AnswerReport:
    """Ask every question under every configuration and score the answers.

    Each question goes through all configurations before the next, so an interruption
    (Ctrl-C) keeps the same finished questions for each; the report is then ``partial``.

    Args:
        asker: answers ``ask(question, options) -> Answer``.
        cases: the questions.
        configs: the configurations to compare.
        dataset, index: names for the report.
        limit: only the first `limit` questions.
        progress: receives ``start(total)`` and ``advance(question_id, configuration)``.
        clock: seconds, for the time per question.
    """
    chosen = list(cases)[:limit] if limit else list(cases)
    report = AnswerReport(
        dataset=dataset,
        index=index,
        questions=len(chosen),
        answerable=sum(case.answerable for case in chosen),
        configurations=[AnswerConfigurationResult(c.name, c.options) for c in configs],
    )
    if progress is not None:
        progress.start(len(chosen) * len(configs))
    try:
        for case in chosen:
            for result in report.configurations:
                started = clock()
                answer = asker.ask(case.question, result.options)
                result.cases.append(score_answer(case, answer, clock() - started))
                if progress is not None:
                    progress.advance(case.id, result.name)
            report.completed += 1
    except KeyboardInterrupt:
        report.partial = True
        for result in report.configurations:
            result.cases = result.cases[: report.completed]
    return report


def evaluate_answers(
    source: Path,
    *,
    settings: Settings,
    configs: Sequence[AnswerConfiguration],
    index: Path | None = None,
    limit: int | None = None,
    progress: Callable[[str], Any] | None = None,
    generator: Generator | None = None,
) -> AnswerReport:
    """`rag eval answers`: load the questions, index the corpus if the set has one, ask, score.

    Args:
        source: a QA JSON Lines file (run on `settings.index`) or a folder with corpus.jsonl
            and qa.jsonl (ingested into its dedicated index, reused when unchanged).
        settings: resolved settings.
        configs: the configurations to compare (`answer_configurations`).
        index: ``--index``: the index to use instead.
        limit: only the first `limit` questions.
        progress: opens a progress receiver for a described stage (None: no progress).
        generator: a ready language model (tests); None loads the GGUF the options name.
    """
    from ragcli.answer.ask import Asker
    from ragcli.evaluation.datasets import load_qa_set
    from ragcli.evaluation.indexes import resolve_index, stage

    dataset = load_qa_set(source)
    group = configs[0].options.query.group if configs else None
    target, _ = resolve_index(
        dataset.corpus, dataset.source, settings=settings, index=index, group=group, progress=progress
    )
    # A QA file run on an existing index: does that index hold the documents it names?
    # (A dataset with a corpus gets its own index, built from that corpus.)
    cases = dataset.cases[:limit] if limit else dataset.cases
    coverage = check_relevant_indexed(cases, target, own_corpus=dataset.corpus is not None)
    with Asker(target, settings=settings, generator=generator) as asker, stage(progress, "answering") as bar:
        report = run_answers(
            asker, dataset.cases, configs, dataset=dataset.name, index=str(target), limit=limit, progress=bar
        )
    report.relevant_indexed, report.relevant_listed, report.warnings = coverage
    return report


def check_relevant_indexed(
    cases: Sequence[QACase], index: Path, *, own_corpus: bool = False
) -> tuple[int, int, list[str]]:
    """(indexed, listed, warnings): whether the index holds the documents the questions name.

    For a set with its own corpus the counts stay 0 and a warning names relevant entries the
    corpus lacks.
    """
    from ragcli.evaluation.retrieval_eval import check_entries_in_corpus, check_entries_indexed

    entries = [entry for case in cases for entry in case.relevant]
    if own_corpus:
        return 0, 0, check_entries_in_corpus(entries, index)
    return check_entries_indexed(entries, index)
