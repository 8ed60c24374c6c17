"""`rag eval retrieval | answers | generate` through typer's CliRunner, with fake models."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from typer.testing import CliRunner

from ragcli.cli import app


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(autouse=True)
def fake_models(monkeypatch):
    from fakes import EchoGenerator, HashEmbedder

    embedder = HashEmbedder()
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: embedder)
    monkeypatch.setattr("ragcli.generation.llama.load_generator", lambda *args, **kwargs: EchoGenerator())
    return embedder


def test_retrieval_json_has_every_configuration_and_metric(runner, fixtures_dir, tmp_path):
    run_file = tmp_path / "run.trec"
    result = runner.invoke(
        app,
        [
            "eval",
            "retrieval",
            str(fixtures_dir / "beir-mini"),
            "--modes",
            "bm25,dense",
            "--json",
            "--output",
            str(run_file),
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema_version"] == 1 and document["kind"] == "eval-retrieval"
    assert [c["name"] for c in document["configurations"]] == ["bm25", "dense"]
    assert set(document["configurations"][0]["metrics"]) == {
        "ndcg@10",
        "recall@1",
        "recall@5",
        "recall@10",
        "recall@100",
        "mrr@10",
        "map@100",
    }
    assert document["queries"] == 15 and document["partial"] is False
    tags = {line.split()[5] for line in run_file.read_text().splitlines()}
    assert tags == {"ragcli-bm25", "ragcli-dense"}


def test_retrieval_table_shows_configurations_side_by_side(runner, fixtures_dir):
    result = runner.invoke(
        app, ["eval", "retrieval", str(fixtures_dir / "beir-mini"), "--modes", "bm25,hybrid", "--limit", "5"]
    )
    assert result.exit_code == 0, result.output
    assert "bm25" in result.stdout and "hybrid" in result.stdout and "nDCG@10" in result.stdout
    assert "5 of 5 queries" in result.stderr  # the table's title; in a pipe a message on stderr


def test_retrieval_reports_the_hybrid_gain_over_the_best_single_mode(runner, fixtures_dir):
    args = ["eval", "retrieval", str(fixtures_dir / "beir-mini"), "--modes", "bm25,dense,hybrid"]
    document = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    ndcg = {c["name"]: c["metrics"]["ndcg@10"] for c in document["configurations"]}
    best = max(("bm25", "dense"), key=lambda name: ndcg[name])
    gain = document["hybrid_gain"]["hybrid"]
    assert gain["best_single"] == best
    assert gain["gain"] == pytest.approx(ndcg["hybrid"] - ndcg[best], abs=1e-3)
    piped = runner.invoke(app, args)  # in a pipe the line is a message beside the table's title
    line = f"hybrid vs best single mode ({best} {ndcg[best]:.3f}): {gain['gain']:+.3f} nDCG@10"
    assert line in piped.stderr
    assert "best single mode" not in piped.stdout


def test_retrieval_in_a_pipe_prints_only_records_on_stdout(fixtures_dir):
    """Through the real rag: stdout holds the header and one tab-separated row per configuration;
    the title and the hybrid gain line are on stderr."""
    from runner import rag

    done = rag("eval", "retrieval", str(fixtures_dir / "beir-mini"), "--modes", "bm25,hybrid")
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert [row.split("\t")[0] for row in rows] == ["configuration", "bm25", "hybrid"], done.stdout
    assert "hybrid vs best single mode (bm25 " in done.stderr


def test_fail_under_exits_1_and_names_metric_value_and_floor(runner, fixtures_dir):
    result = runner.invoke(
        app,
        [
            "eval",
            "retrieval",
            str(fixtures_dir / "beir-mini"),
            "--modes",
            "bm25",
            "--fail-under",
            "ndcg@10=0.99",
            "--fail-under",
            "recall@100=0.5",
            "--json",
        ],
    )
    assert result.exit_code == 1
    assert "bm25: ndcg@10 = " in result.stderr and "below the floor 0.99" in result.stderr
    assert "recall@100" not in result.stderr
    assert json.loads(result.stdout)["configurations"]  # the report is still printed
    passing = runner.invoke(
        app,
        [
            "eval",
            "retrieval",
            str(fixtures_dir / "beir-mini"),
            "--modes",
            "bm25",
            "--fail-under",
            "ndcg@10=0.5",
            "--json",
        ],
    )
    assert passing.exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--modes", "bm25,fuzzy"],
        ["--rerank", "magic"],
        ["--fail-under", "ndcg@11=0.5"],
        ["--fail-under", "ndcg@10"],
    ],
)
def test_bad_options_are_usage_errors(runner, fixtures_dir, args):
    result = runner.invoke(app, ["eval", "retrieval", str(fixtures_dir / "beir-mini"), *args])
    assert result.exit_code == 2


def test_missing_dataset_is_a_one_line_error(runner, tmp_path):
    result = runner.invoke(app, ["eval", "retrieval", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_answers_on_qa_file_over_current_index(runner, fixtures_dir, fake_models, tmp_path):
    from ragcli.config import load_settings
    from ragcli.evaluation.datasets import read_corpus
    from ragcli.ingest.pipeline import ingest_documents

    ingest_documents(
        load_settings().index, read_corpus(fixtures_dir / "beir-mini" / "corpus.jsonl"), embedder=fake_models
    )
    # Away from its corpus, the QA file is answered over the current index.
    qa_file = shutil.copy(fixtures_dir / "beir-mini" / "qa-mini.jsonl", tmp_path / "qa-mini.jsonl")
    result = runner.invoke(
        app,
        [
            "eval",
            "answers",
            str(qa_file),
            "--modes",
            "bm25,hybrid",
            "--limit",
            "3",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["kind"] == "eval-answers" and document["questions"] == 3
    metrics = document["configurations"][1]["metrics"]
    assert {
        "exact_match",
        "f1",
        "answer_in_output",
        "citation_validity",
        "supported",
        "abstained",
        "abstained_unanswerable",
        "abstained_answerable",
        "seconds_per_question",
        "context_recall",
    } <= set(metrics)


def test_answers_table_on_dataset_folder(runner, fixtures_dir, tmp_path):
    folder = tmp_path / "qa-set"
    folder.mkdir()
    shutil.copy(fixtures_dir / "beir-mini" / "corpus.jsonl", folder / "corpus.jsonl")
    shutil.copy(fixtures_dir / "beir-mini" / "qa-mini.jsonl", folder / "qa.jsonl")
    result = runner.invoke(app, ["eval", "answers", str(folder), "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "hybrid" in result.stdout and "2 of 2 questions" in result.stderr


def test_generate_writes_json_lines_usable_by_eval(runner, fixtures_dir, monkeypatch, tmp_path):
    from fakes import ScriptedGenerator

    def reply(prompt: str) -> str:
        passage = prompt.split("Passage:\n", 1)[1]
        words = passage.split()
        return f"Question: What does the passage say about {words[1]}?\nAnswer: {words[2]} {words[3]}"

    monkeypatch.setattr("ragcli.generation.llama.load_generator", lambda *a, **k: ScriptedGenerator(reply))
    result = runner.invoke(
        app, ["eval", "generate", str(fixtures_dir / "beir-mini"), "--n", "4", "--seed", "3"]
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 4
    assert set(records[0]) == {"_id", "question", "answers", "relevant", "chunk_id", "context"}
    assert records[0]["chunk_id"].startswith(records[0]["relevant"][0] + "#")
    qa_file = tmp_path / "qa.jsonl"
    qa_file.write_text(result.stdout)
    again = runner.invoke(
        app, ["eval", "generate", str(fixtures_dir / "beir-mini"), "--n", "4", "--seed", "3"]
    )
    assert again.stdout == result.stdout  # same seed, same records
    from ragcli.evaluation.datasets import load_qa_set, load_retrieval_set

    assert len(load_qa_set(qa_file).cases) == 4 and len(load_retrieval_set(qa_file).qrels) == 4


def test_documented_qa_examples_are_answered_over_their_corpus():
    """The README's and the evaluation guide's `rag eval answers` examples, run as written by the
    real rag on an empty index: the QA file's questions are about its own corpus, so the passages
    retrieved hold the answers."""
    import shlex
    from pathlib import Path

    from runner import rag

    root = Path(__file__).resolve().parent.parent
    pages = (root / "README.md", root / "docs" / "guide" / "evaluation.md")
    every_line = [line for page in pages for line in page.read_text().splitlines()]
    lines = [line for line in every_line if line.startswith("rag eval answers") and "qa-mini" in line]
    assert len(lines) == 2, lines
    for line in lines:
        args = [str(root / arg) if arg.startswith("fixtures/") else arg for arg in shlex.split(line)[1:]]
        done = rag(*args, *([] if "--json" in args else ["--json"]))
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        assert document["warnings"] == [], line
        assert all(c["metrics"]["context_recall"] > 0 for c in document["configurations"]), line


def test_judgments_naming_documents_outside_the_corpus_are_warned_about(tmp_path):
    """Through the real rag: a qrels line naming a document the corpus lacks counted against
    recall without a word; a hand-made set of four documents is scored as computed by hand."""
    from runner import rag

    (tmp_path / "set" / "qrels").mkdir(parents=True)
    corpus = {"a": "Apples are red fruit.", "b": "Bananas are yellow fruit.", "c": "Cars have engines."}
    (tmp_path / "set" / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": key, "text": text}) + "\n" for key, text in corpus.items())
    )
    (tmp_path / "set" / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "yellow bananas"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "engines"})
    )
    (tmp_path / "set" / "qrels" / "test.tsv").write_text("q1\tb\t1\nq2\tc\t1\nq2\tzzz\t1\n")
    done = rag(
        "eval",
        "retrieval",
        str(tmp_path / "set"),
        "--modes",
        "bm25",
        "--json",
        "--index",
        str(tmp_path / "i"),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["warnings"] == [
        "1 of the 3 documents judged relevant are not in the corpus (e.g. 'zzz'): "
        "they count against recall but can never be retrieved"
    ]
    assert "rag: warning: 1 of the 3 documents" in done.stderr
    # q1: b first (recall 1); q2: c first of two relevant (recall 1/2, nDCG 1/(1+1/log2 3)).
    metrics = report["configurations"][0]["metrics"]
    assert metrics["recall@10"] == 0.75 and metrics["mrr@10"] == 1.0
    assert metrics["ndcg@10"] == pytest.approx((1 + 1 / (1 + 1 / math.log2(3))) / 2, abs=1e-4)


def test_an_empty_question_file_is_a_usage_error(tmp_path):
    """Through the real rag: an empty QA file printed a row of dashes and exited 0."""
    from runner import rag

    (tmp_path / "qa.jsonl").write_text("\n")
    done = rag("eval", "answers", str(tmp_path / "qa.jsonl"), "--modes", "bm25")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().startswith(f"rag: error: {tmp_path / 'qa.jsonl'}: no questions; ")
