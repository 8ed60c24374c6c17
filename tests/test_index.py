"""`ragcli.open_index` / `Index`: the library's front door, driven through the Python guide's own example."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ragcli
from fakes import HashEmbedder
from ragcli.errors import NotIndexed, UnknownGroup, UsageError
from ragcli.types import IngestOptions

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "python.md"


def readme_python_example() -> str:
    """The first ```python block of the Python guide (docs/guide/python.md)."""
    text = GUIDE.read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)


@pytest.fixture
def docs(tmp_path, fixtures_dir, monkeypatch) -> Path:
    """A working directory with docs/ holding the fixture documents (the broken ones left out)."""
    shutil.copytree(
        fixtures_dir / "docs", tmp_path / "work" / "docs", ignore=shutil.ignore_patterns("broken")
    )
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "work" / "docs"


@pytest.fixture
def loads(monkeypatch) -> list[str | None]:
    """Every embedding-model load, answered with the hashing fake."""
    calls: list[str | None] = []

    def embedder_for(settings, index_model=None, **kwargs):
        calls.append(index_model)
        return HashEmbedder()

    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", embedder_for)
    return calls


def test_readme_python_example_runs(docs, loads, capsys):
    exec(compile(readme_python_example(), "docs/guide/python.md", "exec"), {})
    check_example_output(capsys.readouterr().out, docs)
    assert len(loads) == 1  # one embedding model for ingest, search and both answers


def check_example_output(out: str, docs: Path) -> None:
    lines = out.splitlines()
    added = len([path for path in docs.iterdir() if path.is_file() and not path.name.startswith(".")])
    assert lines[0].startswith(f"{added} added, ")
    hits = [line for line in lines[1:4] if re.match(r"\d+ [\d.]+ /", line)]
    assert [line.split()[0] for line in hits] == [str(rank) for rank in range(1, len(hits) + 1)]
    assert hits and all("lighthouses.pdf" in line for line in hits)  # the only document on Fresnel lenses
    sources = next(n for n, line in enumerate(lines) if line.startswith("sources: "))
    answer = "\n".join(lines[1 + len(hits) : sources])
    assert "1698" in answer and "lighthouses.pdf" in lines[sources]
    assert "30 minutes" in "\n".join(lines[sources + 1 : -1])
    assert lines[-1] == f"{added} documents"


def test_settings_layers_flag_env_config_default(tmp_path):
    config = tmp_path / "rag.toml"
    config.write_text('mode = "dense"\ntop_k = 7\nmax_tokens = 99\n', encoding="utf-8")
    environ = {"RAG_CONFIG": str(config), "RAG_MODE": "bm25", "RAG_CTX": "512", "RAG_THREADS": "3"}
    index = ragcli.open_index(tmp_path / "idx", environ=environ, group="fine")
    query = index.query_options()
    assert (query.mode, query.top_k, query.group) == ("bm25", 7, "fine")  # env > config; flag
    ask = index.ask_options()
    assert (ask.query.mode, ask.query.top_k, ask.n_ctx, ask.max_tokens, ask.threads) == (
        "bm25",
        7,
        512,
        99,
        3,
    )
    assert index.ask_options(top_k=2, max_tokens=5).query.top_k == 2
    flagged = ragcli.open_index(tmp_path / "idx", environ=environ, mode="hybrid")
    assert flagged.query_options().mode == "hybrid"


def test_defaults_differ_for_query_and_ask_only_when_nothing_sets_top_k(tmp_path):
    plain = ragcli.open_index(tmp_path / "idx", environ={})
    assert plain.query_options().top_k == 10 and plain.ask_options().query.top_k == 5
    assert plain.query_options().mode == plain.ask_options().query.mode == "hybrid"
    assert plain.ask_options().n_ctx == 2048 and plain.ask_options().max_tokens == 256
    assert ragcli.open_index(tmp_path / "idx", environ={"RAG_TOP_K": "8"}).ask_options().query.top_k == 8


def test_bad_settings_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="unknown setting colour"):
        ragcli.open_index(tmp_path, colour="never")
    with pytest.raises(UsageError, match="RAG_MODE: bad value 'fast'"):
        ragcli.open_index(tmp_path, environ={"RAG_MODE": "fast"})
    with pytest.raises(UsageError, match="must be one of bm25, dense, hybrid, llm"):
        ragcli.open_index(tmp_path, mode="fast")


def test_search_ask_remove_status_and_errors(docs, loads):
    with ragcli.open_index("idx") as index:
        with pytest.raises(NotIndexed):
            index.search("anything")
        report = index.ingest([docs], IngestOptions(split_by="word", chunk_size=60, chunk_overlap=0))
        assert report.failed == [] and report.group == "medium"
        best = index.search("sourdough starter", mode="bm25", top_k=1)[0]
        assert best.chunk.path.endswith("bread_baking.md")
        pdf_only = index.search("lighthouse", mode="bm25", filters=["file_type=pdf"])
        assert pdf_only and {hit.chunk.path[-4:] for hit in pdf_only} == {".pdf"}
        with pytest.raises(UnknownGroup):
            index.search("lighthouse", group="nosuch")
        before = index.status()["documents"]
        assert index.remove([docs / "bread_baking.md"]) == 1
        assert index.status()["documents"] == before - 1
        assert all(not doc["path"].endswith("bread_baking.md") for doc in index.documents())
        left = index.search("sourdough", mode="bm25")
        assert not any(hit.chunk.path.endswith("bread_baking.md") for hit in left)
        answer = index.ask("sourdough starter", mode="bm25")
        assert answer.abstained or "bread_baking.md" not in {s.path for s in answer.sources}


def test_settings_group_is_the_group_ingest_fills_and_search_reads(docs, loads):
    with ragcli.open_index("idx", group="fine") as index:
        assert index.ingest([docs]).group == "fine"
        assert index.search("lighthouse", mode="bm25")[0].chunk.group == "fine"
        assert set(index.status()["groups"]) == {"fine"}


def test_evaluate_retrieval_entry_point(fixtures_dir, loads):
    with ragcli.open_index(mode="bm25") as index:
        report = index.evaluate_retrieval(fixtures_dir / "beir-mini")
    assert [result.name for result in report.configurations] == ["bm25"]
    assert report.completed == report.queries > 0
    assert 0.0 < report.configurations[0].metrics["ndcg@10"] <= 1.0


def test_import_ragcli_stays_light():
    code = (
        "import sys, ragcli; assert 'ragcli.index' not in sys.modules; ragcli.open_index; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('ragcli', 'typer', 'numpy', 'faiss', 'llama_cpp', 'torch', 'sqlite_utils')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    loaded = eval(done.stdout)
    assert "ragcli.index" in loaded
    assert not [name for name in loaded if not name.startswith("ragcli")], loaded
    assert not {"ragcli.retrieval.search", "ragcli.answer.ask", "ragcli.store"} & set(loaded)


def test_readme_python_example_with_the_real_embedder(docs, capsys):
    """The same example end to end with the packaged embedding model (ONNX, exported once per run)."""
    exec(compile(readme_python_example(), "docs/guide/python.md", "exec"), {})
    check_example_output(capsys.readouterr().out, docs)
    with ragcli.open_index("my-index") as index:
        hits = index.search("lighthouse lens that focuses light", mode="dense", top_k=1)
        assert hits[0].chunk.path.endswith("lighthouses.pdf")
        assert index.status()["model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_remove_lasts_until_the_path_is_named_again(docs, loads):
    """`remove` is `rag rm`: later ingests of the folder skip the file until it is named."""
    bread = docs / "bread_baking.md"
    with ragcli.open_index("idx") as index:
        total = index.ingest([docs]).added
        plan = index.plan_removal([bread])
        assert plan.total == total and len(plan.matched) == 1 and not plan.everything
        assert index.remove([bread]) == 1
        assert index.ingest([docs]).added == 0  # the folder again: the removed file stays out
        assert not any(doc["path"].endswith("bread_baking.md") for doc in index.documents())
        assert index.ingest([bread]).added == 1  # named: back in
        assert index.get(str(bread)).path.endswith("bread_baking.md")
        chunk_id = index.search("sourdough starter", mode="bm25", top_k=1)[0].chunk.id
        assert "sourdough" in index.get(chunk=chunk_id).text.lower()


@pytest.mark.model
def test_diagnose_and_models_use_the_index_settings(docs, loads):
    with ragcli.open_index("idx") as index:
        index.ingest([docs])
        checks = {check.name: check for check in index.diagnose()}
        assert checks["index opens"].ok, checks["index opens"].detail
        assert str(index.path) in checks["disk space"].detail or checks["disk space"].ok
        assert all(entry.name for entry in index.models())


def test_search_and_ask_share_one_searcher(docs, loads):
    """An Index opens its store and loads its query embedder once for both searching and asking."""
    with ragcli.open_index("idx") as index:
        index.ingest([docs], IngestOptions(split_by="word", chunk_size=60, chunk_overlap=0))
        searcher = index.searcher()
        assert index.asker().searcher is searcher
        hits = index.search("lighthouse lens", mode="hybrid", top_k=1)
        answer = index.ask("What lens does a lighthouse use?", mode="hybrid", answer_style="evidence")
        assert hits and answer.sources
        assert index.embedder() is searcher.embedder()
    assert len(loads) == 1  # one embedding model for ingest, search and the answer


def test_a_searcher_or_asker_used_after_the_index_closed_says_so(docs, loads):
    from ragcli.errors import IndexClosed

    with ragcli.open_index("idx", mode="bm25") as index:
        index.ingest([docs], IngestOptions(split_by="word", chunk_size=30, chunk_overlap=0))
        searcher, asker = index.searcher(), index.asker()
        index.close()
        with pytest.raises(IndexClosed, match=r"the index at .*idx was closed .*index\.searcher\(\)"):
            searcher.search("lighthouse lens", index.query_options())
        with pytest.raises(IndexClosed, match="was closed"):
            asker.ask("What is a Fresnel lens?")
        searcher.close()  # closing again is harmless
        assert index.search("lighthouse lens", top_k=1)  # the Index itself opens again


def test_a_lone_surrogate_in_a_query_or_question_is_read_as_a_replacement_character(docs, loads):
    """A string a JSON decoder made of a bad "\\ud800" escape reaches the API as a lone
    surrogate; bytes that were not UTF-8 (surrogateescape's U+DC80-U+DCFF) always did."""
    with ragcli.open_index("idx", mode="hybrid") as index:
        index.ingest([docs], IngestOptions(split_by="word", chunk_size=30, chunk_overlap=0))
        plain = index.search("lighthouse lens", top_k=3)
        assert index.search("\ud800 lighthouse lens", top_k=3) == plain
        assert index.search("\udfff lighthouse \udcff lens", top_k=3) == plain
        assert index.ask("\ud800 What is a Fresnel lens?").question == "\ufffd What is a Fresnel lens?"


def test_a_blank_query_or_question_is_refused_as_every_front_end_refuses_it(docs, loads):
    """`rag query "  "`, the MCP tools and `rag serve` refuse it; the API searched for nothing."""
    from ragcli.errors import UsageError

    with ragcli.open_index("idx", mode="bm25") as index:
        index.ingest([docs], IngestOptions(split_by="word", chunk_size=30, chunk_overlap=0))
        for blank in ("", " \n\t "):
            with pytest.raises(UsageError, match="^query: give some words to search for$"):
                index.search(blank)
            with pytest.raises(UsageError, match="^question: ask something$"):
                index.ask(blank)
            with pytest.raises(UsageError, match="^question: ask something$"):
                next(index.stream(blank))
