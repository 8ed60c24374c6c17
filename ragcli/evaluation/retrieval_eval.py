"""Retrieval evaluation: run judged queries through a `Searcher` per configuration and score them.

1. Every query goes through every configuration before the next query starts, so an
   interruption (Ctrl-C) leaves all configurations with the same finished queries; those
   are scored and the report is marked partial.
2. Chunk hits become a document ranking: a document's score is its best chunk's score, in
   the order the searcher returned them.
3. The per-query document rankings form a TREC run; `ragcli.evaluation.metrics` scores it
   against the qrels with trec_eval's code (nDCG@10, recall@1/5/10/100, MRR@10, MAP@100).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, Sequence, TextIO

from ragcli.evaluation.datasets import RetrievalSet
from ragcli.evaluation.metrics import RETRIEVAL_MEASURES, retrieval_metrics
from ragcli.types import Hit, Progress

if TYPE_CHECKING:
    from ragcli.config import Settings
    from ragcli.generation.llama import Generator
    from ragcli.retrieval.search import QueryOptions

DEFAULT_TOP_K = 100
RUN_TAG = "ragcli"


class SearcherLike(Protocol):
    """What evaluation needs of `ragcli.retrieval.search.Searcher`."""

    def search(self, query: str, options: QueryOptions) -> list[Hit]: ...


@dataclass(frozen=True)
class Configuration:
    """One retrieval setup to evaluate: a display name and the `QueryOptions` it runs with."""

    name: str
    options: QueryOptions


def configurations(
    modes: Sequence[str], reranks: Sequence[str | None] = (None,), *, base: QueryOptions | None = None
) -> list[Configuration]:
    """Every mode combined with every reranker (None = no reranking), as configurations.

    Args:
        modes: retrieval modes ("bm25", "dense", "hybrid", "llm").
        reranks: rerankers; None or "none" for no reranking.
        base: the `QueryOptions` the others start from (top_k, group, fusion, ...).

    Returns:
        Configurations named ``mode`` or ``mode+reranker``.
    """
    if base is None:
        from ragcli.retrieval.search import QueryOptions

        base = QueryOptions(top_k=DEFAULT_TOP_K)
    candidates = max(base.candidates, base.top_k)
    return [
        Configuration(name, replace(base, mode=mode, rerank=rerank, candidates=candidates))
        for name, mode, rerank in mode_rerank_grid(modes, reranks)
    ]


def mode_rerank_grid(
    modes: Sequence[str], reranks: Sequence[str | None]
) -> list[tuple[str, str, str | None]]:
    """(name, mode, reranker) for every mode under every reranker; "none" or "" means no reranker."""
    grid = []
    for rerank in [None if r in (None, "", "none") else r for r in reranks]:
        grid.extend((mode if rerank is None else f"{mode}+{rerank}", mode, rerank) for mode in modes)
    return grid


@dataclass
class ConfigurationResult:
    """Scores of one configuration over the finished queries."""

    name: str
    options: QueryOptions
    metrics: dict[str, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    run: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def ms_per_query(self) -> float:
        return 1000 * statistics.fmean(self.latencies) if self.latencies else 0.0

    @property
    def median_ms(self) -> float:
        return 1000 * statistics.median(self.latencies) if self.latencies else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.options.mode,
            "rerank": self.options.rerank,
            "top_k": self.options.top_k,
            "metrics": {k: round(v, 4) for k, v in self.metrics.items()},
            "ms_per_query": round(self.ms_per_query, 2),
            "median_ms_per_query": round(self.median_ms, 2),
        }


@dataclass
class RetrievalReport:
    """The result of `run_retrieval`: one `ConfigurationResult` per configuration."""

    dataset: str
    index: str
    queries: int
    completed: int = 0
    partial: bool = False
    skipped: int = 0
    configurations: list[ConfigurationResult] = field(default_factory=list)
    ingest: dict[str, Any] = field(default_factory=dict)
    # for a QA file on an existing index: distinct `relevant` entries, how many are indexed
    relevant_listed: int = 0
    relevant_indexed: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "index": self.index,
            "queries": self.queries,
            "completed": self.completed,
            "partial": self.partial,
            "skipped_queries": self.skipped,
            "relevant_listed": self.relevant_listed,
            "relevant_indexed": self.relevant_indexed,
            "warnings": self.warnings,
            "ingest": self.ingest,
            "metric_names": list(RETRIEVAL_MEASURES),
            "configurations": [result.to_dict() for result in self.configurations],
            "hybrid_gain": hybrid_gains(self.configurations),
        }


SINGLE_MODES = ("bm25", "dense")


def hybrid_gains(
    results: Sequence[ConfigurationResult], metric: str = "ndcg@10"
) -> dict[str, dict[str, Any]]:
    """Each hybrid configuration's `metric` minus the best single mode's with the same reranker.

    Only configurations of the same run are compared, so the figure says whether fusing helped
    on this set, whatever the absolute level. A hybrid without a single mode beside it is left out.

    Returns:
        configuration name -> {"metric", "best_single" (its name), "best_single_value", "gain"}.
    """
    gains: dict[str, dict[str, Any]] = {}
    for result in results:
        if result.options.mode != "hybrid" or metric not in result.metrics:
            continue
        singles = [
            other
            for other in results
            if other.options.mode in SINGLE_MODES
            and other.options.rerank == result.options.rerank
            and metric in other.metrics
        ]
        if not singles:
            continue
        best = max(singles, key=lambda other: other.metrics[metric])
        gains[result.name] = {
            "metric": metric,
            "best_single": best.name,
            "best_single_value": round(best.metrics[metric], 4),
            "gain": round(result.metrics[metric] - best.metrics[metric], 4),
        }
    return gains


DocumentKey = Callable[[str, Hit], str]


def path_key(_query_id: str, hit: Hit) -> str:
    """A hit's document id: its document path (a BEIR corpus stores ``_id`` there)."""
    return hit.chunk.path


def relevant_path_key(qrels: Mapping[str, Mapping[str, int]]) -> DocumentKey:
    """Map a hit to the query's `relevant` entry naming its document, else to its path.

    For QA files run against an ordinary index: an absolute entry matches the same resolved
    path, a relative one matches a path ending in it (so ``notes/a.md`` and ``a.md`` both match
    ``/home/me/notes/a.md``), and any entry matches a path equal to it (BEIR ids).
    """

    def key(query_id: str, hit: Hit) -> str:
        path = hit.chunk.path
        for entry in qrels.get(query_id, {}):
            if _same_document(entry, path):
                return entry
        return path

    return key


def _same_document(entry: str, path: str) -> bool:
    if entry == path:
        return True
    wanted = PurePath(entry)
    if wanted.is_absolute():
        return Path(entry).expanduser().resolve() == Path(path).resolve()
    return PurePath(path).parts[-len(wanted.parts) :] == wanted.parts


# Below this share of the listed `relevant` documents in the index, the scores are most
# likely measured on the wrong index (or a partly ingested one): say so.
FEW_RELEVANT_INDEXED = 0.5


def check_entries_indexed(entries: Sequence[str], index: Path) -> tuple[int, int, list[str]]:
    """(indexed, listed, warnings) for document ids or paths a QA file names as relevant."""
    from ragcli.store.status import list_documents

    if not entries:
        return 0, 0, []
    found, listed = relevant_in_index(entries, (doc["path"] for doc in list_documents(index)))
    if found >= FEW_RELEVANT_INDEXED * listed:
        return found, listed, []
    warning = (
        f"only {found} of the {listed} documents the questions list as relevant are in the index "
        f"{index}: the scores below are likely measured on the wrong index (pass --index)"
    )
    return found, listed, [warning]


def relevant_in_index(entries: Iterable[str], paths: Iterable[str]) -> tuple[int, int]:
    """How many distinct `relevant` entries name an indexed document, of how many listed."""
    listed = set(entries)
    return len(listed) - len(missing_entries(listed, paths)), len(listed)


def missing_entries(entries: Iterable[str], paths: Iterable[str]) -> list[str]:
    """The distinct `relevant` entries that name no indexed document, sorted.

    Same matching as `relevant_path_key`; candidates are narrowed by file name, so this stays
    cheap on a large index.
    """
    by_name: dict[str, list[str]] = {}
    for path in paths:
        by_name.setdefault(PurePath(path).name, []).append(path)
    return sorted(
        entry
        for entry in set(entries)
        if not any(_same_document(entry, path) for path in by_name.get(PurePath(entry).name, ()))
    )


def check_entries_in_corpus(entries: Iterable[str], index: Path) -> list[str]:
    """A warning when judgments name relevant documents a dataset's own corpus lacks.

    Such a document counts against recall but can never be retrieved, which is almost always a
    mistake in the set (a typo in an id, a qrels file from another corpus).
    """
    from ragcli.store.status import list_documents

    listed = set(entries)
    if not listed:
        return []
    missing = missing_entries(listed, (doc["path"] for doc in list_documents(index)))
    if not missing:
        return []
    return [
        f"{len(missing)} of the {len(listed)} documents judged relevant are not in the corpus "
        f"(e.g. '{missing[0]}'): they count against recall but can never be retrieved"
    ]


def document_scores(query_id: str, hits: Sequence[Hit], key: DocumentKey = path_key) -> dict[str, float]:
    """A document ranking from chunk hits: best chunk score per document, in hit order.

    trec_eval orders a run by score (ties by document id), not by position. When the scores
    do not strictly fall along the searcher's order (ties, or llm selection), rank-derived
    scores are used instead so that every tool reading the run sees the searcher's order.
    """
    best: dict[str, float] = {}
    for hit in hits:
        doc = key(query_id, hit)
        best[doc] = max(best.get(doc, float("-inf")), float(hit.score))
    scores = list(best.values())
    if all(a > b for a, b in zip(scores, scores[1:])):
        return best
    return {doc: float(len(best) - position) for position, doc in enumerate(best)}


def run_retrieval(
    searcher: SearcherLike,
    dataset: RetrievalSet,
    configs: Sequence[Configuration],
    *,
    index: str = "",
    key: DocumentKey = path_key,
    limit: int | None = None,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> RetrievalReport:
    """Run every judged query through every configuration and score the runs.

    Args:
        searcher: answers ``search(query, options) -> [Hit]``.
        dataset: queries and qrels.
        configs: the configurations to compare.
        index: the index path, for the report.
        key: maps a hit to the document id the qrels use.
        limit: only the first `limit` queries.
        progress: receives ``start(total)`` and ``advance(query_id, configuration)``.
        clock: seconds, for per-query latency.

    Returns:
        A `RetrievalReport`; ``partial`` when interrupted, scored on the finished queries.
    """
    query_ids = list(dataset.queries)[:limit] if limit else list(dataset.queries)
    report = RetrievalReport(
        dataset=dataset.name,
        index=index,
        queries=len(query_ids),
        skipped=dataset.skipped,
        configurations=[ConfigurationResult(c.name, c.options) for c in configs],
    )
    if progress is not None:
        progress.start(len(query_ids) * len(configs))
    try:
        for query_id in query_ids:
            _run_query(
                searcher, dataset.queries[query_id], query_id, report.configurations, key, progress, clock
            )
            report.completed += 1
    except KeyboardInterrupt:
        report.partial = True
        _drop_unfinished(report.configurations, query_ids[: report.completed])
    finished = {qid: dataset.qrels[qid] for qid in query_ids[: report.completed]}
    for result in report.configurations:
        result.metrics = retrieval_metrics(finished, result.run)
    return report


def _run_query(
    searcher: SearcherLike,
    text: str,
    query_id: str,
    results: Iterable[ConfigurationResult],
    key: DocumentKey,
    progress: Progress | None,
    clock: Callable[[], float],
) -> None:
    for result in results:
        started = clock()
        hits = searcher.search(text, result.options)
        result.latencies.append(clock() - started)
        result.run[query_id] = document_scores(query_id, hits, key)
        if progress is not None:
            progress.advance(query_id, result.name)


def _drop_unfinished(results: Iterable[ConfigurationResult], finished: Sequence[str]) -> None:
    """Forget the interrupted query, which only some configurations ran."""
    for result in results:
        result.latencies = result.latencies[: len(finished)]
        result.run = {qid: result.run[qid] for qid in finished}


def write_trec_run(handle: TextIO, report: RetrievalReport) -> int:
    """Write every configuration's run as TREC run lines ``qid Q0 docid rank score tag``.

    The tag is ``ragcli-<configuration>``, so one file holds all configurations and
    ``trec_eval`` or ir-measures can tell them apart. Returns the number of lines written.
    """
    lines = 0
    for result in report.configurations:
        tag = f"{RUN_TAG}-{result.name}".replace(" ", "_")
        for query_id, scores in result.run.items():
            ranked = sorted(scores.items(), key=lambda item: -item[1])
            for rank, (doc, score) in enumerate(ranked, start=1):
                handle.write(f"{query_id} Q0 {doc.replace(' ', '_')} {rank} {score:.6f} {tag}\n")
                lines += 1
    return lines


def evaluate_retrieval(
    source: Path,
    *,
    settings: Settings,
    configs: Sequence[Configuration],
    index: Path | None = None,
    group: str | None = None,
    limit: int | None = None,
    progress: Callable[[str], Any] | None = None,
    generator_factory: Callable[[], Generator] | None = None,
    store: str | None = None,
) -> RetrievalReport:
    """`rag eval retrieval`: load the set, index its corpus (reused when unchanged), run, score.

    Args:
        source: a BEIR folder, a folder with corpus.jsonl and qa.jsonl, or a QA file.
        settings: resolved settings; `settings.index` is used for a QA file without corpus.
        configs: the configurations to compare (`configurations`).
        index: ``--index``: the index to (re)use instead of the dedicated one.
        group: the chunk group.
        limit: only the first `limit` queries.
        progress: opens a progress receiver for a described stage (None: no progress).
        generator_factory: the language model for llm mode / llm reranking.
        store: where a dataset's own index keeps its content (None: locally); see `ingest`.

    Raises:
        UsageError: the dataset is malformed; NotIndexed: a QA file but no index to run it on.
    """
    from ragcli.evaluation.datasets import load_retrieval_set
    from ragcli.evaluation.indexes import resolve_index, stage
    from ragcli.retrieval.search import Searcher

    dataset = load_retrieval_set(source)
    target, ingested = resolve_index(
        dataset.corpus,
        dataset.source,
        settings=settings,
        index=index,
        group=group,
        progress=progress,
        store=store,
    )
    # Without a corpus the ids are the QA file's `relevant` entries, matched to indexed paths.
    key = path_key if dataset.corpus is not None else relevant_path_key(dataset.qrels)
    with (
        Searcher(target, settings=settings, generator_factory=generator_factory) as searcher,
        stage(progress, "querying") as bar,
    ):
        report = run_retrieval(
            searcher, dataset, configs, index=str(target), key=key, limit=limit, progress=bar
        )
    report.ingest = ingested
    entries = [entry for judged in dataset.qrels.values() for entry, grade in judged.items() if grade > 0]
    if dataset.corpus is None:
        report.relevant_indexed, report.relevant_listed, report.warnings = check_entries_indexed(
            entries, target
        )
    else:
        report.warnings = check_entries_in_corpus(entries, target)
    return report
