"""`rag ingest`, `status`, `ls`, `rm` through the CLI, in-process with the fake embedder."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from fakes import HashEmbedder
from ragcli.cli import app


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.setattr(
        "ragcli.generation.chooser.embedder_for", lambda settings, index_model=None, **kw: HashEmbedder()
    )
    return CliRunner()


@pytest.fixture
def docs(tmp_path, fixtures_dir):
    target = tmp_path / "docs"
    shutil.copytree(fixtures_dir / "docs", target)
    return target


def test_ingest_fixtures_reports_failures_and_ingests_the_rest(runner, docs):
    result = runner.invoke(app, ["ingest", str(docs), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema_version"] == 1
    assert report["added"] >= 7
    failed = {f["path"].rsplit("/", 1)[-1] for f in report["failed"]}
    assert {"corrupt.pdf", "encrypted.pdf", "scanned.pdf"} <= failed
    for failure in report["failed"]:
        assert failure["reason"]
    assert "failed" in result.stderr


def test_strict_makes_failures_exit_1(runner, docs):
    result = runner.invoke(app, ["ingest", str(docs), "--strict"])
    assert result.exit_code == 1


def test_second_ingest_is_all_unchanged(runner, docs):
    runner.invoke(app, ["ingest", str(docs)])
    result = runner.invoke(app, ["ingest", str(docs), "--json"])
    report = json.loads(result.stdout)
    assert report["added"] == report["updated"] == report["embedded"] == 0
    assert report["unchanged"] >= 7


def test_ingest_without_paths_reuses_known_roots(runner, docs):
    runner.invoke(app, ["ingest", str(docs)])
    (docs / "new-note.md").write_text("# Kites\n\nBox kites were invented by Lawrence Hargrave in 1893.")
    result = runner.invoke(app, ["ingest", "--json"])
    assert json.loads(result.stdout)["added"] == 1


def test_status_ls_rm_json(runner, docs):
    runner.invoke(app, ["ingest", str(docs)])
    status = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert status["documents"] >= 7 and "medium" in status["groups"]
    listing = json.loads(runner.invoke(app, ["ls", "--json"]).stdout)
    paths = [d["path"] for d in listing["documents"]]
    pdf = next(p for p in paths if p.endswith("lighthouses.pdf"))
    removed = json.loads(runner.invoke(app, ["rm", pdf, "--json"]).stdout)
    assert removed["removed"] == 1
    after = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    assert after["documents"] == status["documents"] - 1


def test_human_output_goes_to_stderr_and_tables_to_stdout(runner, docs):
    result = runner.invoke(app, ["ingest", str(docs)])
    assert result.stdout == ""
    assert "added" in result.stderr
    table = runner.invoke(app, ["ls"], env={"COLUMNS": "250"})
    assert "lighthouses.pdf" in table.stdout


def test_bad_overlap_exits_2_with_one_line(runner, docs):
    result = runner.invoke(
        app, ["ingest", str(docs), "--split-by", "word", "--chunk-size", "10", "--chunk-overlap", "10"]
    )
    assert result.exit_code == 2
    assert "--chunk-overlap" in result.stderr


def test_missing_path_and_missing_index_are_clear(runner, tmp_path):
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such file" in result.stderr
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 1 and "rag ingest" in result.stderr


def test_index_option_wins_over_environment(runner, docs, tmp_path):
    other = tmp_path / "other-index"
    runner.invoke(app, ["ingest", str(docs), "--index", str(other)])
    assert (other / "index.db").is_file()
    assert runner.invoke(app, ["status"]).exit_code == 1  # $RAG_INDEX still empty
