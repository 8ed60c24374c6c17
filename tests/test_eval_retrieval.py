"""Retrieval evaluation: hits to document runs, the run loop, interruption, TREC run files."""

from __future__ import annotations

import io

import pytest

from ragcli.evaluation.datasets import RetrievalSet
from ragcli.evaluation.retrieval_eval import (
    configurations,
    document_scores,
    evaluate_retrieval,
    relevant_path_key,
    run_retrieval,
    write_trec_run,
)
from ragcli.retrieval.search import QueryOptions
from ragcli.types import Chunk, Hit


def hit(path: str, score: float, chunk_id: int = 0) -> Hit:
    chunk = Chunk(
        id=chunk_id, doc_id=0, group="medium", order=0, text="", start=0, end=0, page=None, path=path
    )
    return Hit(chunk=chunk, score=score)


class FakeSearcher:
    """Returns fixed rankings per (mode, query); raises KeyboardInterrupt on a chosen query."""

    def __init__(self, rankings, interrupt_on: str | None = None):
        self.rankings = rankings
        self.interrupt_on = interrupt_on
        self.calls: list[tuple[str, str]] = []

    def search(self, query, options):
        if query == self.interrupt_on and options.mode == "dense":
            raise KeyboardInterrupt
        self.calls.append((options.mode, query))
        return [hit(path, score) for path, score in self.rankings[options.mode][query]]


DATASET = RetrievalSet(
    name="toy",
    source=None,
    queries={"q1": "alpha", "q2": "beta", "q3": "gamma"},
    qrels={"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}},
)
RANKINGS = {
    "bm25": {"alpha": [("a", 3.0), ("x", 2.0)], "beta": [("x", 5.0), ("b", 4.0)], "gamma": [("c", 1.0)]},
    "dense": {"alpha": [("x", 0.9), ("a", 0.8)], "beta": [("b", 0.7)], "gamma": [("y", 0.3)]},
}


def test_document_scores_keep_best_chunk_per_document_in_order():
    hits = [hit("a", 0.9, 1), hit("b", 0.8, 2), hit("a", 0.5, 3), hit("c", 0.4, 4)]
    assert list(document_scores("q", hits).items()) == [("a", 0.9), ("b", 0.8), ("c", 0.4)]


def test_tied_scores_become_rank_scores_so_the_order_survives():
    hits = [hit("z", 1.0), hit("a", 1.0), hit("m", 0.5)]
    assert document_scores("q", hits) == {"z": 3.0, "a": 2.0, "m": 1.0}


def test_configurations_cross_modes_and_rerankers():
    configs = configurations(["bm25", "hybrid"], ["none", "cross-encoder"], base=QueryOptions(top_k=100))
    assert [c.name for c in configs] == ["bm25", "hybrid", "bm25+cross-encoder", "hybrid+cross-encoder"]
    assert configs[3].options.rerank == "cross-encoder" and configs[0].options.rerank is None
    assert all(c.options.top_k == 100 and c.options.candidates >= 100 for c in configs)


def test_run_scores_every_configuration_side_by_side():
    ticks = iter(range(100))
    configs = configurations(["bm25", "dense"], base=QueryOptions(top_k=10))
    report = run_retrieval(FakeSearcher(RANKINGS), DATASET, configs, clock=lambda: next(ticks) * 0.01)
    bm25, dense = report.configurations
    assert not report.partial and report.completed == 3
    # bm25 ranks: 1, 2, 1 -> MRR (1 + 1/2 + 1) / 3; dense: 2, 1, none -> (1/2 + 1 + 0) / 3
    assert bm25.metrics["mrr@10"] == pytest.approx(2.5 / 3)
    assert dense.metrics["mrr@10"] == pytest.approx(1.5 / 3)
    assert dense.metrics["recall@100"] == pytest.approx(2 / 3)
    assert bm25.ms_per_query == pytest.approx(10.0)
    assert report.to_dict()["configurations"][0]["metrics"]["mrr@10"] == pytest.approx(0.8333)


def test_interruption_keeps_finished_queries_and_marks_partial():
    searcher = FakeSearcher(RANKINGS, interrupt_on="beta")
    report = run_retrieval(searcher, DATASET, configurations(["bm25", "dense"], base=QueryOptions()))
    assert report.partial and report.completed == 1
    for result in report.configurations:
        assert list(result.run) == ["q1"] and len(result.latencies) == 1
    assert report.configurations[0].metrics["mrr@10"] == 1.0  # scored on q1 only
    assert report.configurations[1].metrics["mrr@10"] == 0.5


def test_limit_runs_the_first_queries():
    searcher = FakeSearcher(RANKINGS)
    report = run_retrieval(searcher, DATASET, configurations(["bm25"], base=QueryOptions()), limit=2)
    assert report.queries == 2 and [q for _, q in searcher.calls] == ["alpha", "beta"]


def test_trec_run_file_reproduces_the_metrics():
    import ir_measures

    from ragcli.evaluation.metrics import retrieval_metrics

    report = run_retrieval(
        FakeSearcher(RANKINGS), DATASET, configurations(["bm25", "dense"], base=QueryOptions())
    )
    handle = io.StringIO()
    assert write_trec_run(handle, report) == 9
    lines = handle.getvalue().splitlines()
    assert lines[0] == "q1 Q0 a 1 3.000000 ragcli-bm25"
    dense_run: dict = {}
    for line in lines:
        qid, _, doc, _, score, tag = line.split()
        if tag == "ragcli-dense":
            dense_run.setdefault(qid, {})[doc] = float(score)
    assert retrieval_metrics(DATASET.qrels, dense_run) == report.configurations[1].metrics
    assert ir_measures.calc_aggregate([ir_measures.nDCG @ 10], DATASET.qrels, dense_run)[
        ir_measures.nDCG @ 10
    ] == pytest.approx(report.configurations[1].metrics["ndcg@10"])


def test_relevant_entries_match_indexed_paths(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("x")
    key = relevant_path_key({"q1": {"a.md": 1, str(notes / "b.md"): 1, "d7": 1, "sub/c.md": 1}})
    assert key("q1", hit(str(notes / "a.md"), 1.0)) == "a.md"
    assert key("q1", hit(str(notes / "b.md"), 1.0)) == str(notes / "b.md")
    assert key("q1", hit("d7", 1.0)) == "d7"
    assert key("q1", hit("/x/sub/c.md", 1.0)) == "sub/c.md"
    assert key("q1", hit("/x/other/c.md", 1.0)) == "/x/other/c.md"
    assert key("q2", hit(str(notes / "a.md"), 1.0)) == str(notes / "a.md")


@pytest.fixture
def fake_models(monkeypatch):
    from fakes import HashEmbedder

    embedder = HashEmbedder()
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: embedder)
    return embedder


def test_evaluate_on_beir_fixture_builds_then_reuses_its_index(fixtures_dir, fake_models, tmp_path):
    from ragcli.config import load_settings

    # Its own cache dir: dataset indexes live there, and other tests index the same fixture.
    settings = load_settings(cache_dir=tmp_path / "cache")
    configs = configurations(["bm25", "dense", "hybrid"], base=QueryOptions(top_k=100))
    first = evaluate_retrieval(fixtures_dir / "beir-mini", settings=settings, configs=configs)
    assert first.ingest["added"] == 34 and first.ingest["embedded"] > 0
    assert first.index.startswith(str(settings.cache_dir / "eval" / "beir-mini-"))
    bm25 = first.configurations[0].metrics
    # Hand-written queries share words with their passages: BM25 must find nearly all of them.
    assert bm25["ndcg@10"] > 0.85 and bm25["recall@10"] == 1.0
    fake_models.embedded_texts.clear()
    second = evaluate_retrieval(fixtures_dir / "beir-mini", settings=settings, configs=configs[:1], limit=3)
    assert second.ingest["unchanged"] == 34 and second.ingest["embedded"] == 0
    assert second.index == first.index and second.completed == 3


def test_evaluate_qa_file_runs_on_the_current_index(fixtures_dir, fake_models):
    from ragcli.config import load_settings
    from ragcli.evaluation.datasets import read_corpus
    from ragcli.ingest.pipeline import ingest_documents

    settings = load_settings()
    ingest_documents(
        settings.index, read_corpus(fixtures_dir / "beir-mini" / "corpus.jsonl"), embedder=fake_models
    )
    report = evaluate_retrieval(
        fixtures_dir / "beir-mini" / "qa-mini.jsonl",
        settings=settings,
        configs=configurations(["bm25"], base=QueryOptions(top_k=10)),
    )
    assert report.index == str(settings.index) and report.ingest == {}
    assert report.queries == 14 and report.skipped == 3
    assert report.configurations[0].metrics["recall@10"] > 0.9
