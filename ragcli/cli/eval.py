"""`rag eval retrieval`, `rag eval answers`, `rag eval generate`."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterator, List, Optional, Sequence

import typer
from rich import box
from rich.table import Table

from ragcli.cli.options import EmbedModelOption, GroupOption, IndexOption, JsonOption
from ragcli.cli.progress import progress_bar
from ragcli.cli.render import emit_json, emit_jsonl, stderr_console
from ragcli.evaluation.metrics import RETRIEVAL_MEASURES

if TYPE_CHECKING:
    from ragcli.evaluation import AnswerReport, RetrievalReport
    from ragcli.index import Index
    from ragcli.retrieval.search import QueryOptions

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Measure retrieval and answer quality on labelled sets.\n\n"
    "Example: rag eval retrieval ./scifact --modes bm25,dense,hybrid",
)

RETRIEVAL_METRICS = tuple(RETRIEVAL_MEASURES)
# Short column headings keep seven metrics readable in 80 columns.
COLUMN_NAMES = {
    "ndcg@10": "nDCG@10",
    "recall@1": "R@1",
    "recall@5": "R@5",
    "recall@10": "R@10",
    "recall@100": "R@100",
    "mrr@10": "MRR@10",
    "map@100": "MAP@100",
}

DatasetArgument = Annotated[
    Path,
    typer.Argument(
        metavar="DATASET",
        help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv), a folder with "
        "corpus.jsonl and qa.jsonl, or a QA JSON Lines file (run on the current index).",
        show_default=False,
    ),
]
ModesOption = Annotated[
    str, typer.Option("--modes", help="Comma-separated retrieval modes to compare: bm25, dense, hybrid, llm.")
]
RerankOption = Annotated[
    str,
    typer.Option(
        "--rerank",
        help="Comma-separated rerankers, each combined with every mode: none, cross-encoder, llm, keyword.",
    ),
]
LimitOption = Annotated[
    Optional[int], typer.Option("--limit", min=1, help="Only the first N queries.", show_default=False)
]
FailUnderOption = Annotated[
    Optional[List[str]],
    typer.Option(
        "--fail-under",
        metavar="METRIC=VALUE",
        help="Exit 1 when any configuration scores below this floor, e.g. ndcg@10=0.6 (repeatable).",
        show_default=False,
    ),
]
FusionOption = Annotated[
    Optional[str],
    typer.Option(
        "--fusion",
        help="Hybrid fusion: adaptive, rrf or score (default: adaptive, as rag query).",
        show_default=False,
    ),
]
WeightsOption = Annotated[
    Optional[str],
    typer.Option("--weights", help="Hybrid weights 'bm25,dense', e.g. 1,0.5.", show_default=False),
]


def split_list(value: str, allowed: Sequence[str], option: str) -> list[str]:
    """`a,b` -> ["a", "b"], each checked against `allowed` (a usage error, exit 2, otherwise)."""
    items = [item.strip() for item in value.split(",") if item.strip()]
    bad = [item for item in items if item not in allowed]
    if bad or not items:
        raise typer.BadParameter(
            f"{', '.join(bad) or 'nothing given'}: choose from {', '.join(allowed)}", param_hint=option
        )
    return items


def parse_floors(values: Sequence[str] | None, known: Sequence[str]) -> dict[str, float]:
    """`["ndcg@10=0.6"]` -> {"ndcg@10": 0.6}; unknown metrics and bad numbers are usage errors."""
    floors = {}
    for value in values or ():
        name, _, number = value.partition("=")
        name = name.strip().lower()
        try:
            floors[name] = float(number)
        except ValueError:
            raise typer.BadParameter(
                f"{value!r}: expected METRIC=VALUE, e.g. ndcg@10=0.6", param_hint="--fail-under"
            ) from None
        if name not in known:
            raise typer.BadParameter(
                f"unknown metric {name!r}: choose from {', '.join(known)}", param_hint="--fail-under"
            )
    return floors


def _stages(enabled: bool):
    """A factory of progress bars, one per described stage, drawn on a terminal's stderr."""
    console = stderr_console()

    @contextmanager
    def stage(description: str) -> Iterator[Any]:
        with progress_bar(console, description, enabled=enabled) as bar:
            yield bar

    return stage


def _query_options(
    index: Index, top_k: int, group: str | None, fusion: str | None, weights: str | None
) -> QueryOptions:
    """The `QueryOptions` every compared configuration starts from (the modes and rerankers vary)."""
    from ragcli.cli.options import parse_weights
    from ragcli.choices import FUSIONS

    flags: dict[str, Any] = {"top_k": top_k, "group": group, "candidates": max(50, top_k)}
    if fusion is not None:
        flags["fusion"] = split_list(fusion, FUSIONS, "--fusion")[0]
    if weights is not None:
        flags["weights"] = parse_weights(weights)
    return index.query_options(**flags)


def _compared(modes: str, rerank: str) -> tuple[list[str], list[str]]:
    """`--modes` and `--rerank`: the retrieval modes and rerankers whose combinations are compared."""
    from ragcli.choices import MODES, RERANKERS

    return split_list(modes, MODES, "--modes"), split_list(rerank, ("none", *RERANKERS), "--rerank")


def _finish(
    report: RetrievalReport | AnswerReport,
    floors: dict[str, float],
    json_document: tuple[str, dict[str, Any]] | None,
    show: Callable[[], None],
) -> None:
    """The report on stdout (the JSON document, else `show()`'s tables), then the exit code:
    130 when interrupted, 1 when a configuration scores below a --fail-under floor."""
    from ragcli.evaluation.metrics import floor_failures

    if json_document is not None:
        emit_json(*json_document)
    else:
        show()
    _stop_if_partial(report)
    failures = floor_failures(((r.name, r.metrics) for r in report.configurations), floors)
    if failures:
        console = stderr_console()
        for failure in failures:
            console.print(f"rag: fail-under: {failure}", highlight=False)
        raise typer.Exit(1)


def _stop_if_partial(report: RetrievalReport | AnswerReport) -> None:
    """Ctrl-C: the finished part was reported above; exit 130 as an interrupted command does."""
    if report.partial:
        stderr_console().print(
            f"rag: interrupted after {report.completed} finished; the results above cover only those",
            highlight=False,
        )
        raise typer.Exit(130)


def _print_table(table: Table) -> None:
    """The metrics table on a terminal; in a pipe, tab-separated lines with a header line."""
    from ragcli.cli.render import print_table

    print_table(table, header=True)


def _cell(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def retrieval(
    dataset: DatasetArgument,
    modes: ModesOption = "bm25,dense,hybrid",
    rerank: RerankOption = "none",
    top_k: Annotated[
        int,
        typer.Option(
            "--top-k", "-k", min=1, help="Hits retrieved per query (metrics look at most 100 deep)."
        ),
    ] = 100,
    group: GroupOption = None,
    limit: LimitOption = None,
    fusion: FusionOption = None,
    weights: WeightsOption = None,
    index: IndexOption = None,
    embed_model: EmbedModelOption = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="Write every configuration's per-query run to this file in TREC run format.",
            show_default=False,
        ),
    ] = None,
    fail_under: FailUnderOption = None,
    json_output: JsonOption = False,
    store: Annotated[
        Optional[str],
        typer.Option(
            "--store",
            help="Index the corpus in this store (a Milvus Lite PATH.db or http://host:19530) "
            "instead of locally; the dataset gets its own index folder per store.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Score retrieval on a labelled set: nDCG@10, recall@1/5/10/100, MRR@10, MAP@100, ms/query.

    A dataset with a corpus is ingested into its own index under the cache dir (reused when
    unchanged; --index to choose it). A QA file runs on the current index, matching its
    "relevant" entries to indexed paths. Ctrl-C stops early and reports the finished queries.

    Example: rag eval retrieval ./scifact --modes bm25,dense,hybrid --fail-under ndcg@10=0.6
    """
    from ragcli.evaluation.retrieval_eval import configurations, write_trec_run
    from ragcli.index import open_index

    floors = parse_floors(fail_under, RETRIEVAL_METRICS)
    index_ = open_index(index, embed_model=embed_model)
    chosen = configurations(
        *_compared(modes, rerank), base=_query_options(index_, top_k, group, fusion, weights)
    )
    report = index_.evaluate_retrieval(
        dataset, chosen, index=index, limit=limit, progress=_stages(True), store=store
    )
    _say_warnings(report.warnings)
    if output is not None:
        with output.open("w", encoding="utf-8") as handle:
            write_trec_run(handle, report)
    json_document = ("eval-retrieval", report.to_dict()) if json_output else None
    _finish(report, floors, json_document, lambda: _print_retrieval(report))


def _print_retrieval(report: RetrievalReport) -> None:
    title = f"{report.dataset}: {report.completed} of {report.queries} queries"
    if report.partial:
        title += " (partial: interrupted)"
    table = Table(
        "configuration",
        *(COLUMN_NAMES[m] for m in RETRIEVAL_METRICS),
        "ms/query",
        title=title,
        box=box.SIMPLE_HEAD,
    )
    for result in report.configurations:
        table.add_row(
            result.name,
            *(_cell(result.metrics.get(m)) for m in RETRIEVAL_METRICS),
            f"{result.ms_per_query:.1f}",
        )
    _print_table(table)
    _print_gains(report)
    ingest = report.ingest
    if ingest:
        stderr_console().print(
            f"index {report.index}: {ingest['added']} added, {ingest['updated']} updated, "
            f"{ingest['unchanged']} unchanged, {ingest['embedded']} embedded",
            highlight=False,
        )


def _print_gains(report: RetrievalReport) -> None:
    """One line per hybrid configuration: its nDCG@10 gain over the best single mode beside it."""
    from ragcli.cli.render import print_aside
    from ragcli.evaluation.retrieval_eval import hybrid_gains

    for name, gain in hybrid_gains(report.configurations).items():
        print_aside(
            f"{name} vs best single mode ({gain['best_single']} {gain['best_single_value']:.3f}): "
            f"{gain['gain']:+.3f} nDCG@10"
        )


def answers(
    dataset: Annotated[
        Path,
        typer.Argument(
            metavar="QA_FILE|DATASET_DIR",
            help="A QA JSON Lines file (run on the current index) or a folder with "
            "corpus.jsonl and qa.jsonl (ingested into its own index).",
            show_default=False,
        ),
    ],
    modes: ModesOption = "hybrid",
    rerank: RerankOption = "none",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Hits retrieved per question.")] = 5,
    group: GroupOption = None,
    limit: LimitOption = None,
    fusion: FusionOption = None,
    weights: WeightsOption = None,
    model: Annotated[
        Optional[str],
        typer.Option(
            "--model",
            help="GGUF model file or a name `rag models` lists (default: $RAG_MODEL, else the packaged "
            "SmolLM2).",
            show_default=False,
        ),
    ] = None,
    answer_style: Annotated[
        str,
        typer.Option(
            "--answer-style",
            help="auto, evidence or generative (as in `rag ask`).",
        ),
    ] = "auto",
    max_tokens: Annotated[int, typer.Option(min=1, help="Answer length limit in tokens.")] = 256,
    ctx: Annotated[
        int, typer.Option("--ctx", min=128, help="Model context window in tokens (as in `rag ask`).")
    ] = 2048,
    n_ctx: Annotated[
        Optional[int], typer.Option("--n-ctx", min=128, hidden=True, help="Old spelling of --ctx.")
    ] = None,
    threads: Annotated[
        Optional[int],
        typer.Option(min=1, help="CPU threads for generation (default: all).", show_default=False),
    ] = None,
    cache: Annotated[
        bool,
        typer.Option(help="Reuse cached answers (off: every question is generated, so timings are real)."),
    ] = False,
    reader: Annotated[
        Optional[str],
        typer.Option(
            "--reader",
            help="The short line's reader, as in `rag ask`: builtin, none or a QA model folder.",
            show_default=False,
        ),
    ] = None,
    index: IndexOption = None,
    embed_model: EmbedModelOption = None,
    details: Annotated[
        bool, typer.Option(help="With --json, include every question's answer and scores.")
    ] = False,
    fail_under: FailUnderOption = None,
    json_output: JsonOption = False,
) -> None:
    """Score answers: exact match, F1, answer in output, citation validity, supported, abstention.

    A set whose questions carry "must_contain" strings (and a "kind") is also scored on the
    share answered (every string in the answer), must-contain recall and gold page cited,
    per kind. A QA file lying beside its corpus (corpus.jsonl or a corpus/ folder of
    documents) is answered over that corpus, indexed once into its own index.

    Runs `rag ask` on each question with the given settings; several --modes are compared side
    by side. Questions with an empty "answers" list are unanswerable: abstaining is right.

    Example: rag eval answers ./xquad-en --limit 50 --modes bm25,hybrid --json

    Example: rag eval answers ./docs-qa/qa-report.jsonl
    """
    from ragcli.choices import ANSWER_STYLES, STYLE_ALIASES
    from ragcli.evaluation.answer_eval import ANSWER_METRICS, answer_configurations
    from ragcli.index import open_index

    floors = parse_floors(fail_under, ANSWER_METRICS)
    index_ = open_index(index, embed_model=embed_model, gguf_model=model)
    base = index_.ask_options(
        query=_query_options(index_, top_k, group, fusion, weights),
        model=model,
        max_tokens=max_tokens,
        n_ctx=n_ctx or ctx,
        threads=threads,
        use_cache=cache,
        answer_style=split_list(answer_style, (*ANSWER_STYLES, *STYLE_ALIASES), "--answer-style")[0],
        reader=reader,
    )
    chosen = answer_configurations(*_compared(modes, rerank), base=base)
    report = index_.evaluate_answers(dataset, chosen, index=index, limit=limit, progress=_stages(True))
    _say_warnings(report.warnings)
    json_document = ("eval-answers", report.to_dict(details)) if json_output else None
    _finish(report, floors, json_document, lambda: _print_answers(report, ANSWER_METRICS))


def _say_warnings(warnings: Sequence[str]) -> None:
    for warning in warnings:
        stderr_console().print(f"rag: warning: {warning}", style="bold yellow", highlight=False, markup=False)


def _print_answers(report: AnswerReport, names: Sequence[str]) -> None:
    title = f"{report.dataset}: {report.completed} of {report.questions} questions"
    title += f" ({report.answerable} answerable)"
    if report.partial:
        title += " (partial: interrupted)"
    headers = {"seconds_per_question": "s/question", "seconds_per_question_median": "median s"}
    table = Table(
        "configuration", *(headers.get(name, name) for name in names), title=title, box=box.SIMPLE_HEAD
    )
    for result in report.configurations:
        metrics = result.metrics
        table.add_row(
            result.name, *(_cell(metrics[name], 2 if name.startswith("seconds") else 3) for name in names)
        )
    _print_table(table)
    for result in report.configurations:
        _print_kinds(result)


def _print_kinds(result: Any) -> None:
    """The per-kind table of a set whose questions have kinds (nothing otherwise)."""
    from ragcli.evaluation.answer_eval import KIND_METRICS

    kinds = result.kind_metrics()
    if not kinds:
        return
    table = Table("kind", *KIND_METRICS, title=f"{result.name}: per kind", box=box.SIMPLE_HEAD)
    for kind, values in kinds.items():
        table.add_row(kind, str(values["questions"]), *(_cell(values[m]) for m in KIND_METRICS[1:]))
    _print_table(table)


def generate(
    folder: Annotated[
        Path,
        typer.Argument(
            metavar="DIR",
            help="A folder of documents, or a BEIR folder (its corpus.jsonl is used).",
            show_default=False,
        ),
    ],
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="Question/answer pairs to make.")] = 50,
    seed: Annotated[int, typer.Option(help="Sampling seed (same seed, corpus and model: same output).")] = 0,
    model: Annotated[
        Optional[str],
        typer.Option(
            "--model",
            help="GGUF model file (default: $RAG_MODEL, else the packaged SmolLM2).",
            show_default=False,
        ),
    ] = None,
    threads: Annotated[
        Optional[int],
        typer.Option(min=1, help="CPU threads for generation (default: all).", show_default=False),
    ] = None,
) -> None:
    """Make synthetic question/answer pairs from a corpus with the local model, as JSON Lines.

    Each line is {"_id", "question", "answers", "relevant", "chunk_id", "context"}, tied to the
    chunk it was asked about; malformed or ungrounded pairs are dropped. The output feeds
    `rag eval retrieval` and `rag eval answers` directly. Progress goes to stderr.

    Example: rag eval generate ~/notes --n 50 > qa.jsonl
    """
    from ragcli.index import open_index

    index_ = open_index(gguf_model=model, threads=threads)
    with _stages(True)("generating") as bar:
        emit_jsonl(index_.generate_qa(folder, n=n, seed=seed, progress=bar))


app.command("retrieval")(retrieval)
app.command("answers")(answers)
app.command("generate")(generate)
