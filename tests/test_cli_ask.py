"""`rag ask` through typer's CliRunner (fake embedder; fake or real model) and the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from fakes import EchoGenerator, HashEmbedder
from ragcli.cli import app
from ragcli.ingest.pipeline import ingest_documents
from ragcli.answer.prompting import NOT_FOUND
from ragcli.types import ChunkSettings, Document

WORDS = ChunkSettings("word", 40, 5)
DOCS = [
    Document(
        "/notes/router.md",
        "To reset the router, hold the button on the back for ten seconds until the lights blink.",
        "md",
    ),
    Document(
        "/papers/lighthouse.pdf",
        "The lighthouse lamp was lit every evening.\fThe keeper wrote the "
        "log of passing ships by candle light.",
        "pdf",
    ),
    Document("/notes/茶.md", "中国是茶的故乡，唐代的陆羽写成了世界上第一部茶学专著《茶经》。", "md"),
]
# The generative path (a fake or the real model writes the answer); the extractive default has its own tests.
FAST = [
    "--mode",
    "bm25",
    "--ctx",
    "512",
    "--max-tokens",
    "24",
    "--threads",
    "2",
    "--answer-style",
    "generative",
]


@pytest.fixture
def index(isolated_home, monkeypatch):
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: HashEmbedder())
    ingest_documents(isolated_home, DOCS, embedder=HashEmbedder(), group="medium", chunking=WORDS)
    return isolated_home


@pytest.fixture
def echo(monkeypatch):
    """The model is the deterministic fake (the packaged GGUF is still checked to exist)."""
    generator = EchoGenerator()
    monkeypatch.setattr("ragcli.answer.ask.load_generator", lambda *args, **kwargs: generator)
    return generator


def invoke(*args, input=None):
    return CliRunner().invoke(app, ["ask", *args], input=input)


def test_json_document_has_the_documented_fields(index, echo):
    result = invoke("How do I reset the router?", *FAST, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["kind"] == "answer"
    assert doc["answer"].endswith("[1].") and doc["abstained"] is False and doc["cached"] is False
    assert doc["citations"] == [{"number": 1, "path": "/notes/router.md", "page": None, "place": None}]
    assert {"number", "path", "page", "score", "text"} <= set(doc["sources"][0])
    assert {"sentence", "label", "score", "source"} == set(doc["support"][0])
    assert {"retrieve", "rerank", "prompt", "first_token", "total"} <= set(doc["timings"])
    assert set(doc["tokens"]) == {"prompt", "completion"}
    again = json.loads(invoke("How do I reset the router?", *FAST, "--json").stdout)
    assert again["cached"] is True and again["answer"] == doc["answer"]
    fresh = json.loads(invoke("How do I reset the router?", *FAST, "--json", "--no-cache").stdout)
    assert fresh["cached"] is False and len(echo.calls) == 2


def test_citation_maps_to_path_and_page(index, echo):
    doc = json.loads(invoke("keeper log ships candle", *FAST, "--json").stdout)
    assert doc["citations"] == [{"number": 1, "path": "/papers/lighthouse.pdf", "page": 1, "place": None}]


def test_pipe_output_is_plain_answer_then_sources(index, echo):
    result = invoke("How do I reset the router?", *FAST)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("To reset the router") and lines[0].endswith("[1].")
    assert "Sources:" in lines and "  [1] /notes/router.md" in lines
    assert "\x1b[" not in result.stdout and "Support" not in result.stdout


def test_questions_from_stdin_are_json_lines(index, echo):
    result = invoke("-", *FAST, input="How do I reset the router?\n\n中国 茶经\n")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["question"] for r in records] == ["How do I reset the router?", "中国 茶经"]
    assert records[1]["citations"][0]["path"] == "/notes/茶.md"
    assert all(r["schema_version"] == 1 for r in records)


def test_nothing_relevant_says_so(index, echo):
    result = invoke("quantum gluon plasma", *FAST, "--json")
    doc = json.loads(result.stdout)
    assert doc["abstained"] and doc["answer"] == NOT_FOUND and doc["sources"] == []
    assert echo.calls == []


@pytest.mark.parametrize("style", ["generative", "extractive"])
def test_nothing_relevant_is_printed_without_sources(index, echo, style):
    result = invoke("quantum gluon plasma", "--mode", "bm25", "--answer-style", style, "--no-cache")
    assert result.stdout.strip() == NOT_FOUND
    assert "Sources" not in result.stdout


def test_missing_model_is_one_line_exit_1(index, tmp_path):
    result = invoke("router", *FAST, "--model", str(tmp_path / "missing.gguf"))
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "missing.gguf does not exist" in result.stderr
    assert result.stdout == ""


def test_not_gguf_is_one_line_exit_1(index, tmp_path):
    fake = tmp_path / "weights.gguf"
    fake.write_text("not a model")
    result = invoke("router", *FAST, "--model", str(fake))
    assert result.exit_code == 1 and "is not a GGUF model file" in result.stderr


def test_context_too_small_is_one_line_exit_1(index, echo):
    result = invoke(
        "router", "--mode", "bm25", "--ctx", "128", "--max-tokens", "100", "--answer-style", "generative"
    )
    assert result.exit_code == 1 and "context too small for any chunk" in result.stderr


# -- the real packaged GGUF (SmolLM2-135M: loads in ~0.3 s; answers kept to 24 tokens) ----


@pytest.mark.model
def test_real_model_answers_end_to_end(index):
    result = invoke("How do I reset the router?", *FAST, "--json", "--top-k", "1")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["answer"] and doc["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert 0 < doc["tokens"]["completion"] <= 24 and doc["tokens"]["prompt"] > 20
    assert 0 < doc["timings"]["first_token"] <= doc["timings"]["total"]
    assert doc["sources"][0]["path"] == "/notes/router.md"
    assert doc["citations"] and all(c["path"] for c in doc["citations"])
    assert "llama_context" not in result.stderr  # llama.cpp's own warnings stay quiet without -v


@pytest.mark.model
def test_cold_ask_streams_to_stdout_without_torch_or_llama_noise(index):
    code = (
        "import sys\n"
        "from ragcli.cli import main\n"
        f"sys.argv = ['rag', 'ask', 'How do I reset the router?', *{FAST!r}, '--top-k', '1']\n"
        "try:\n    main()\n"
        "finally:\n    sys.stderr.write('TORCH=%s\\n' % ('torch' in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "TORCH=False" in done.stderr
    answer, _, sources = done.stdout.partition("\nSources")
    assert answer.strip() and "/notes/router.md" in sources
    assert "llama" not in done.stdout.lower() and "ggml" not in done.stdout.lower()


@pytest.mark.model
@pytest.mark.slow
def test_cold_hybrid_ask_with_the_real_embedder_never_imports_torch(isolated_home, model_cache_dir):
    """The default mode embeds the question: through ONNX, so still no torch."""
    from ragcli.config import load_settings
    from ragcli.generation.chooser import embedder_for

    embedder = embedder_for(load_settings())  # exports the ONNX model once per session cache
    ingest_documents(isolated_home, DOCS, embedder=embedder, group="medium", chunking=WORDS)
    code = (
        "import sys\n"
        "from ragcli.cli import main\n"
        "sys.argv = ['rag', 'ask', 'How do I reset the router?', '--ctx', '512', '--max-tokens', '16', "
        "'--top-k', '2', '--json']\n"
        "try:\n    main()\n"
        "finally:\n    sys.stderr.write('TORCH=%s\\n' % ('torch' in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "TORCH=False" in done.stderr
    doc = json.loads(done.stdout)
    assert doc["sources"] and doc["sources"][0]["path"] == "/notes/router.md"


def test_terminal_view_colours_support_by_label(capsys, monkeypatch):
    """On a terminal the support list is coloured: green supported, yellow partial, red unsupported."""
    from rich.console import Console

    from ragcli.answer.result import Answer
    from ragcli.cli import ask as ask_cli
    from ragcli.answer.context import Source
    from ragcli.answer.support import SentenceSupport

    monkeypatch.setattr(
        ask_cli,
        "stdout_console",
        lambda: Console(file=sys.stdout, force_terminal=True, color_system="standard"),
    )
    answer = Answer(
        "q",
        "A [1]. B. C.",
        False,
        (Source(1, "a.pdf", 2, 1.0, "A", (1,)),),
        (1,),
        (
            SentenceSupport("A [1].", "supported", 1.0, 1),
            SentenceSupport("B.", "partial", 0.4, 1),
            SentenceSupport("C.", "unsupported", 0.0, None),
        ),
    )
    ask_cli._print_sources(answer)
    out = capsys.readouterr().out
    assert "[1] a.pdf:2" in out
    assert "\x1b[32mA [1].\x1b[0m" in out and "\x1b[33mB.\x1b[0m" in out and "\x1b[31mC.\x1b[0m" in out


def test_verbatim_quotes_are_not_relabelled_on_the_terminal():
    from ragcli.answer.result import Answer
    from ragcli.answer.context import Source

    source = Source(1, "a.md", None, 1.0, "The blood is blue because\nof hemocyanin.", (1,))
    answer = Answer("q", "x", False, (source,))
    assert answer.is_verbatim_quote('"The blood is blue because of hemocyanin." [1]')
    assert answer.is_verbatim_quote('"The blood is blue because of hemocyanin." [1] [3]')
    assert not answer.is_verbatim_quote('"The blood is red." [1]')
    assert not answer.is_verbatim_quote("The blood is blue because of hemocyanin [1].")


def test_a_quoted_step_is_one_sentence_that_reads_as_a_quote():
    """Cut again at its number, a quoted step ('"2. Add the salt." [1]') became a fragment that
    no longer read as a quote, and the terminal labelled it."""
    from ragcli.answer.context import Source
    from ragcli.answer.result import Answer
    from ragcli.answer.support import annotate_support

    source = Source(1, "bread.md", None, 1.0, "Method\n\n1. Mix the flour.\n2. Add the salt and knead.", (1,))
    text = '"1. Mix the flour." [1]\n"2. Add the salt and knead." [1]'
    support = annotate_support(text, [source])
    assert [s.sentence for s in support] == text.split("\n")
    answer = Answer("how do I bake bread?", text, False, (source,), support=support)
    assert not [s for s in support if not answer.is_verbatim_quote(s.sentence)]


def test_evidence_budget_is_a_setting_from_flag_environment_or_config(index, monkeypatch):
    question = ["what did the keeper of the lighthouse write?", "--mode", "bm25", "--no-cache"]
    question += ["--answer-style", "evidence"]
    whole = invoke(*question).stdout
    assert "lamp was lit every evening" in whole and "log of passing ships" in whole
    short = invoke(*question, "--evidence-chars", "40").stdout
    quoted = [line for line in short.splitlines() if line.startswith('"')]
    assert len(quoted) == 1 and quoted[0] in whole  # the best sentence always shows, alone here
    monkeypatch.setenv("RAG_EVIDENCE_CHARS", "40")
    assert invoke(*question).stdout == short
    assert invoke(*question, "--evidence-chars", "1000").stdout == whole  # the flag wins
    bad = invoke(*question, "--evidence-chars", "0")
    assert bad.exit_code == 2 and "--evidence-chars" in bad.output


def _answer(text: str):
    from ragcli.answer.result import Answer

    return Answer(question="q", text=text, abstained=False)


def _stalled(stderr):
    """An answer whose first words wait until something is drawn on stderr (at most 30 s)."""
    import time

    waited = time.monotonic() + 30
    while not stderr.getvalue() and time.monotonic() < waited:
        time.sleep(0.05)
    yield "The keeper lit the lamp."
    yield _answer("The keeper lit the lamp.")


def test_a_spinner_waits_for_the_first_words_on_a_terminal_only(monkeypatch, capsys):
    import io

    from rich.console import Console

    from ragcli.cli import ask

    stderr = io.StringIO()
    monkeypatch.setattr(ask, "stderr_console", lambda: Console(file=stderr, force_terminal=True, width=80))
    monkeypatch.setattr("ragcli.cli.render.is_terminal", lambda stream: stream is sys.stderr)
    ask._print_streamed(_stalled(stderr))
    assert "Answering" in stderr.getvalue()
    assert "The keeper lit the lamp." in capsys.readouterr().out

    piped = io.StringIO()
    monkeypatch.setattr(ask, "stderr_console", lambda: Console(file=piped, force_terminal=True))
    monkeypatch.setattr("ragcli.cli.render.is_terminal", lambda stream: False)
    ask._print_streamed(iter(["In a pipe.", _answer("In a pipe.")]))
    assert piped.getvalue() == "" and "In a pipe." in capsys.readouterr().out


def test_a_summarys_title_and_headings_line_is_not_relabelled_on_the_terminal():
    from ragcli.answer.context import Source
    from ragcli.answer.result import Answer

    text = "# Bread at Home\n\nSourdough is old.\n\n## Keeping a starter\n\nFeed it.\n\n## Method\n\n1. Mix."
    answer = Answer("q", "x", False, (Source(1, "bread.md", None, 1.0, text, (1,)),))
    assert answer.is_outline("Bread at Home (sections: Keeping a starter; Method) [1]")
    assert answer.is_outline("Bread at Home [1]")
    assert not answer.is_outline("Bread at Home (sections: Keeping a starter; Baking) [1]")
    assert not answer.is_outline("Bread at Home (sections: Method) [2]")  # not that source's
    assert not answer.is_outline("Sourdough is old and sour [1]")
