"""`rag ask` honours every setting `rag query` honours, from every layer (flag, environment
variable, config file), checked through the real `rag` executable in subprocesses.

Each setting is observed in what the command does: an unknown group is an error, `mode`
shows in the sources' scores (BM25 scores are large, fused RRF scores below 1/30), `top_k`
in the number of sources, `ctx` as the "context too small" error, `max_tokens` in the
completion tokens the model reports, `threads` in what reaches llama.cpp.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner import rag as run_rag


QUESTION = "How long does the autolyse rest last?"
FLAGS = {
    "group": "--group",
    "mode": "--mode",
    "top_k": "--top-k",
    "ctx": "--ctx",
    "max_tokens": "--max-tokens",
    "threads": "--threads",
}
LAYERS = ("flag", "env", "config")

# The real CLI in a fresh interpreter, recording the threads handed to llama.cpp.
THREADS_PROBE = """
import json, sys
import ragcli.generation.llama
real = ragcli.generation.llama._load_llama
def recording(path, *, n_ctx, threads, seed):
    sys.stderr.write(f"THREADS={threads}\\n")
    return real(path, n_ctx=n_ctx, threads=threads, seed=seed)
ragcli.generation.llama._load_llama = recording
sys.argv = ["rag", *json.loads(sys.argv[1])]
from ragcli.cli import main
main()
"""


@pytest.fixture(scope="module")
def built_index(tmp_path_factory, corpus_index) -> Path:
    """One index of the fixture documents, built by `rag ingest` with the packaged embedder
    (this module's copy: its answers are cached in it)."""
    return corpus_index("docs").copy(tmp_path_factory.mktemp("settings-index") / "idx")


@pytest.fixture
def rag(built_index, model_cache_dir, tmp_path):
    """Run `rag COMMAND ...` with settings given at one layer; returns the finished process."""

    def run(command: str, layer: str, settings: dict, *args: str, probe: bool = False):
        env = {
            **os.environ,
            "RAG_INDEX": str(built_index),
            "RAG_CACHE_DIR": str(model_cache_dir),
            "RAG_CONFIG": str(tmp_path / "config.toml"),
        }
        argv = [command, *args]
        if layer == "flag":
            argv += [part for name, value in settings.items() for part in (FLAGS[name], str(value))]
        elif layer == "env":
            env.update({"RAG_" + name.upper(): str(value) for name, value in settings.items()})
        else:
            lines = [f"{name} = {json.dumps(value)}" for name, value in settings.items()]
            (tmp_path / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        command_line = [sys.executable, "-c", THREADS_PROBE, json.dumps(argv)] if probe else ["rag", *argv]
        return subprocess.run(command_line, env=env, capture_output=True, text=True, timeout=600)

    return run


@pytest.mark.parametrize("layer", LAYERS)
def test_group_unknown_is_the_same_error_for_ask_and_query(rag, layer):
    asked = rag("ask", layer, {"group": "nosuch"}, QUESTION)
    queried = rag("query", layer, {"group": "nosuch"}, QUESTION)
    assert asked.returncode == queried.returncode == 1
    assert asked.stdout == queried.stdout == ""
    assert asked.stderr == queried.stderr == "rag: error: unknown group 'nosuch' (this index has: medium)\n"


def test_ask_defaults_without_settings(rag):
    done = rag("ask", "env", {}, QUESTION, "--json")
    assert done.returncode == 0, done.stderr
    sources = json.loads(done.stdout)["sources"]
    # hybrid (adaptive fusion: scores in 0..1, where bm25 scores run higher), several hits read
    assert len(sources) >= 2 and sources[0]["score"] <= 1.0


@pytest.mark.parametrize("layer", LAYERS)
def test_mode_and_top_k(rag, layer):
    done = rag("ask", layer, {"mode": "bm25", "top_k": 1}, QUESTION, "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert len(answer["sources"]) == 1 and answer["sources"][0]["score"] > 1  # one BM25 hit
    assert answer["sources"][0]["path"].endswith("bread_baking.md")
    queried = rag("query", layer, {"mode": "bm25", "top_k": 1}, QUESTION, "--json")
    hits = json.loads(queried.stdout)["hits"]
    assert json.loads(queried.stdout)["mode"] == "bm25"
    assert [hit["score"] for hit in hits] == [answer["sources"][0]["score"]]


@pytest.mark.parametrize("layer", LAYERS)
def test_ctx(rag, layer):
    done = rag("ask", layer, {"ctx": 200}, QUESTION, "--answer-style", "generative", "--no-cache")
    assert done.returncode == 1
    assert "context too small" in done.stderr and "raise --ctx" in done.stderr


@pytest.mark.model  # generates with the packaged GGUF model
@pytest.mark.parametrize("layer", LAYERS)
def test_max_tokens_and_threads(rag, layer):
    done = rag(
        "ask",
        layer,
        {"max_tokens": 2, "threads": 1},
        QUESTION,
        "--answer-style",
        "generative",
        "--top-k",
        "1",
        "--no-cache",
        "--json",
        probe=True,
    )
    assert done.returncode == 0, done.stderr
    assert "THREADS=1" in done.stderr.splitlines()
    assert 1 <= json.loads(done.stdout)["tokens"]["completion"] <= 2


@pytest.mark.parametrize("layer", ("env", "config"))
def test_ingest_fills_the_group_the_settings_name(model_cache_dir, tmp_path, layer):
    """`RAG_GROUP` (or the config file's `group`) chooses the group `rag ingest` fills, as it
    chooses the group `rag query` reads; the --group flag still wins over both."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kites.md").write_text("# Kites\n\nBox kites were invented by Lawrence Hargrave in 1893.\n")
    env = {**os.environ, "RAG_CACHE_DIR": str(model_cache_dir), "RAG_CONFIG": str(tmp_path / "config.toml")}
    if layer == "env":
        env["RAG_GROUP"] = "fine"
    else:
        (tmp_path / "config.toml").write_text('group = "fine"\n', encoding="utf-8")
    index = str(tmp_path / "idx")

    def rag(*args: str) -> subprocess.CompletedProcess:
        return run_rag(*args, env=env)

    ingested = rag("ingest", "--index", index, str(docs), "--json")
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["group"] == "fine"
    flagged = rag("ingest", "--index", index, str(docs), "--group", "coarse", "--json")
    assert flagged.returncode == 0, flagged.stderr
    assert json.loads(flagged.stdout)["group"] == "coarse"
    status = json.loads(rag("status", "--index", index, "--json").stdout)
    assert set(status["groups"]) == {"fine", "coarse"}
    queried = rag("query", "--index", index, "Hargrave", "--mode", "bm25", "--json")
    assert queried.returncode == 0, queried.stderr
    assert json.loads(queried.stdout)["hits"][0]["path"].endswith("kites.md")


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "no paths given and none ingested before"),
        (("docs", "--chunk-size", "0"), "--chunk-size must be at least 1"),
    ],
)
def test_ingest_usage_errors_come_before_the_model_loads(tmp_path, args, message):
    """A usage error is reported at once, not after loading (or failing to load) the model."""
    (tmp_path / "docs").mkdir()
    env = {**os.environ, "RAG_CONFIG": str(tmp_path / "none.toml")}
    done = subprocess.run(
        [
            "rag",
            "ingest",
            "--index",
            str(tmp_path / "idx"),
            "--embed-model",
            str(tmp_path / "no-model"),
            *args,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("rag: error: ") and done.stderr.count("\n") == 1
    assert message in done.stderr
    assert done.stdout == ""
