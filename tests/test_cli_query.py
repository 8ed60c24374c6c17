"""`rag query` through typer's CliRunner (hashing fake embedder) and the real entry point."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from runner import rag as run_rag  # the subprocess runner; `rag` here is in-process
from fakes import HashEmbedder
from ragcli.cli import app
from ragcli.cli.query import explain_line, highlighted_snippet
from ragcli.ingest.pipeline import ingest_documents
from ragcli.store.local.database import Store
from ragcli.types import ChunkSettings, Document

WHOLE = ChunkSettings("word", 2000, 0)
DOCS = [
    Document(
        "/notes/router.md",
        "To reset the router, hold the button on the back for ten seconds until the lights blink.",
        "md",
        {"author": "ann"},
    ),
    Document(
        "/notes/wifi.txt",
        "If the wireless network is slow, move the router away from walls.",
        "txt",
        {"author": "bob"},
    ),
    Document(
        "/papers/lighthouse.pdf",
        "The lighthouse lamp was lit every evening; its beam warned ships.\f"
        "The keeper wrote the log of passing ships by candle light.",
        "pdf",
        {"author": "ann"},
    ),
    Document("/notes/茶.md", "中国是茶的故乡，唐代的陆羽写成了世界上第一部茶学专著《茶经》。", "md", {}),
]


@pytest.fixture
def loads(monkeypatch):
    calls = []

    def embedder_for(settings, index_model=None, **kwargs):
        calls.append(index_model)
        return HashEmbedder()

    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", embedder_for)
    return calls


@pytest.fixture
def index(isolated_home, loads):
    ingest_documents(
        isolated_home, DOCS, embedder=HashEmbedder(), group="medium", chunking=ChunkSettings("page", 1, 0)
    )
    return isolated_home


def rag(*args: str, input: str | None = None, env: dict | None = None):
    return CliRunner().invoke(app, ["query", *args], input=input, env=env)


@pytest.fixture
def terminal(monkeypatch):
    """Render as on a terminal (CliRunner's stdout is not one; in a pipe the table is TSV lines)."""
    monkeypatch.setattr("ragcli.cli.render.is_terminal", lambda stream: True)


def test_table_shows_rank_score_source_and_snippet(index, terminal):
    result = rag("lighthouse keeper", "--mode", "bm25", env={"COLUMNS": "140"})
    assert result.exit_code == 0, result.output
    assert "/papers/lighthouse.pdf:2" in result.stdout  # page of the second page's chunk
    assert "keeper" in result.stdout and "score" in result.stdout


def test_narrow_terminal_stacks_hits(index, terminal):
    result = rag("reset the router", "--mode", "bm25", "--explain", env={"COLUMNS": "50"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1. ") and "/notes/router.md" in lines[0]
    assert all(len(line) <= 50 for line in lines)
    assert any(line.startswith("   ") and "router" in line for line in lines)


def test_json_document(index):
    result = rag("reset the router", "--json", "-k", "2")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["schema_version"] == 1 and document["query"] == "reset the router"
    assert document["mode"] == "hybrid" and len(document["hits"]) == 2
    top = document["hits"][0]
    assert set(top) == {"rank", "score", "path", "page", "place", "chunk_id", "group", "text", "sources"}
    assert top["rank"] == 1 and top["path"] == "/notes/router.md" and top["group"] == "medium"
    assert set(top["sources"]) == {"bm25", "dense"} and top["sources"]["bm25"]["rank"] == 1


def test_jsonl_and_format_paths(index):
    result = rag("router", "--jsonl", "--mode", "bm25")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["rank"] for r in records] == [1, 2] and {r["query"] for r in records} == {"router"}
    result = rag("ships", "--format", "paths", "--mode", "bm25")
    assert result.stdout.splitlines() == ["/papers/lighthouse.pdf"]  # two chunks, one path


def test_explain_shows_each_retriever(index):
    result = rag("router button", "--explain", "--json")
    sources = json.loads(result.stdout)["hits"][0]["sources"]
    assert all({"rank", "score", "weight"} <= set(sources[name]) for name in ("bm25", "dense"))
    assert sources["bm25"]["weight"] + sources["dense"]["weight"] == pytest.approx(1, abs=1e-3)
    table = rag("router button", "--explain", env={"COLUMNS": "160"})
    assert "bm25 #1" in table.stdout and "dense #" in table.stdout and "fused" in table.stdout
    assert f"(w {sources['dense']['weight']:.2f})" in table.stdout  # the weight this query gave dense
    rrf = json.loads(rag("router button", "--fusion", "rrf", "--json").stdout)["hits"][0]
    assert rrf["sources"]["bm25"]["weight"] == 0.5 and rrf["score"] < 0.1


@pytest.mark.parametrize("args", [["-"], []])
def test_queries_from_stdin_stream_json_lines_and_load_the_model_once(index, loads, args):
    result = rag(*args, "-k", "1", input="reset the router\n\nlighthouse lamp\n陆羽 茶经\n")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["query"], r["path"]) for r in records] == [
        ("reset the router", "/notes/router.md"),
        ("lighthouse lamp", "/papers/lighthouse.pdf"),
        ("陆羽 茶经", "/notes/茶.md"),
    ]
    assert len(loads) == 1


def test_filters_and_min_score(index):
    result = rag("router lamp", "--mode", "bm25", "--filter", "author=bob", "--json")
    assert [h["path"] for h in json.loads(result.stdout)["hits"]] == ["/notes/wifi.txt"]
    result = rag("router lamp", "--mode", "bm25", "--min-score", "1000", "--json")
    assert json.loads(result.stdout)["hits"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["router", "--group", "fine"], "unknown group 'fine'"),
        (["router", "--filter", "colour=red"], "unknown filter key 'colour'"),
    ],
)
def test_runtime_errors_are_one_line_and_exit_1(index, args, message):
    result = rag(*args)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr and result.stdout == ""


def test_no_index_and_empty_index_exit_1(isolated_home):
    result = rag("router")
    assert result.exit_code == 1 and "no index" in result.stderr
    Store.create(isolated_home).close()
    result = rag("router")
    assert result.exit_code == 1 and "is empty" in result.stderr


def test_model_mismatch_exits_1(index, monkeypatch):
    monkeypatch.setattr(
        "ragcli.generation.chooser.embedder_for", lambda settings, model=None, **kw: HashEmbedder(16)
    )
    result = rag("router", "--mode", "dense")
    assert result.exit_code == 1 and "rebuild" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["router", "--mode", "fuzzy"],
        ["router", "--format", "xml"],
        ["router", "--rerank", "magic"],
        ["router", "--weights", "1"],
        ["router", "--weights", "a,b"],
        ["router", "--top-k", "0"],
        ["router", "--filter", "novalue"],
    ],
)
def test_bad_flags_exit_2(index, args):
    assert rag(*args).exit_code == 2


def test_every_help_has_an_example():
    result = CliRunner().invoke(app, ["query", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "Example" in result.stdout and "rag query" in result.stdout
    assert "fused score" in result.stdout  # --min-score documents what it cuts for hybrid


def test_snippet_highlights_query_terms_in_bold():
    text = highlighted_snippet("Resetting the router: press reset.", "reset router")
    bold = [text.plain[span.start : span.end] for span in text.spans if "bold" in str(span.style)]
    assert bold == ["Resetting", "router", "reset"]


def test_explain_line_marks_a_missing_retriever():
    from ragcli.types import Chunk, Hit

    hit = Hit(Chunk(1, 1, "g", 0, "t", 0, 1, None, "p"), 0.0164, 1, {"bm25": {"rank": 1, "score": 3.2}})
    assert explain_line(hit) == "bm25 #1 3.2 · dense - · fused 0.0164"


# -- the real entry point ------------------------------------------------------------------------
def wide_env() -> dict[str, str]:
    """This test's environment (read when called: fixtures change it), 120 columns wide."""
    return {**os.environ, "COLUMNS": "120"}


def test_entry_point_bm25_json_and_stdin(index):
    done = run_rag("query", "lighthouse keeper", "--mode", "bm25", "--json", stdin="", env=wide_env())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"][0]["path"] == "/papers/lighthouse.pdf"
    done = run_rag("query", "--mode", "bm25", "--format", "paths", stdin="reset the router\n", env=wide_env())
    assert done.stdout.splitlines() == ["/notes/router.md", "/notes/wifi.txt"]


def test_entry_point_table_reads_a_page_break_as_a_space(isolated_home, loads):
    """A chunk that runs over a page break shows it as a space in the table's snippet, not as an
    escaped form feed; a control character that is no page break stays escaped."""
    paged = Document("/papers/keeper.pdf", "Visitors climb it.\fThe Fresnel lens\x07 shines.", "pdf", {})
    ingest_documents(isolated_home, [paged], embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    done = run_rag("query", "fresnel lens", "--mode", "bm25", "--format", "table", stdin="", env=wide_env())
    assert done.returncode == 0, done.stderr
    assert "Visitors climb it. The Fresnel lens\\x07 shines." in done.stdout, done.stdout


def test_entry_point_compares_numeric_metadata_as_numbers(isolated_home, loads):
    """`--filter 'pages>=10'` kept a 4-page PDF: "4" >= "10" as text."""
    docs = [
        Document("/papers/short.pdf", "lighthouse lamp", "pdf", {"pages": 4}),
        Document("/papers/long.pdf", "lighthouse keeper", "pdf", {"pages": 12}),
    ]
    ingest_documents(isolated_home, docs, embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    for wanted, expected in (("pages>=10", ["/papers/long.pdf"]), ("pages<10", ["/papers/short.pdf"])):
        args = ("query", "lighthouse", "--mode", "bm25", "--filter", wanted, "--format", "paths")
        done = run_rag(*args, stdin="", env=wide_env())
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == expected, wanted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--min-score", "nan"), "Invalid value for '--min-score': nan is not a finite number"),
        (("--weights", "nan,1"), "Invalid value for '--weights': weights must be non-negative numbers"),
        (("--weights", "1"), "Invalid value for '--weights': give two numbers"),
    ],
)
def test_entry_point_refuses_numbers_that_are_not_numbers(index, args, message):
    """`--min-score nan` printed no hits and exited 0; a bad --weights did not name the option."""
    done = run_rag("query", "router", "--mode", "bm25", *args, stdin="", env=wide_env())
    assert done.returncode == 2 and done.stdout == ""
    assert message in done.stderr, done.stderr


def test_entry_point_exit_codes(isolated_home):
    done = run_rag("query", "router", stdin="", env=wide_env())
    assert done.returncode == 1 and done.stderr.startswith("rag: error: no index")
    assert run_rag("query", "router", "--mode", "fuzzy", stdin="", env=wide_env()).returncode == 2


def test_config_mode_and_top_k_apply_when_flags_are_absent(tmp_path, monkeypatch):
    from ragcli.config import default_config_path, set_config_value

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a", "b", "c"):
        (docs / f"{name}.txt").write_text(f"honey bees {name} forage on clover")
    monkeypatch.setattr(
        "ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: __import__("fakes").HashEmbedder()
    )
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(docs)]).exit_code == 0
    set_config_value(default_config_path(), "mode", "bm25")
    set_config_value(default_config_path(), "top_k", "2")
    result = json.loads(runner.invoke(app, ["query", "honey bees", "--json"]).stdout)
    assert result["mode"] == "bm25" and len(result["hits"]) == 2
    monkeypatch.setenv("RAG_TOP_K", "1")
    assert len(json.loads(runner.invoke(app, ["query", "honey bees", "--json"]).stdout)["hits"]) == 1
    flagged = json.loads(runner.invoke(app, ["query", "honey bees", "--json", "-k", "3"]).stdout)
    assert len(flagged["hits"]) == 3
