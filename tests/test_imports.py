"""The query path stays light: `rag --help` and a BM25 query import no model runtime.

Each check runs the real CLI `main()` in a fresh interpreter and lists the heavy modules
left in `sys.modules` afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import HashEmbedder
from ragcli.ingest.pipeline import ingest_documents
from ragcli.types import ChunkSettings, Document

HEAVY = (
    "torch",
    "sentence_transformers",
    "transformers",
    "faiss",
    "llama_cpp",
    "onnxruntime",
    "mcp",
    "watchfiles",
    "pymilvus",
    "milvus_lite",
)
TESTS = Path(__file__).resolve().parent

PROBE = """
import json, sys
sys.argv = ["rag", *json.loads(sys.argv[1])]
FAKE = {fake}
if FAKE:
    sys.path.insert(0, {tests!r})
    import ragcli.generation.chooser
    from fakes import HashEmbedder
    ragcli.generation.chooser.embedder_for = lambda *args, **kwargs: HashEmbedder()
from ragcli.cli import main
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
heavy = sorted(name for name in sys.modules if name.split(".")[0] in {watched!r})
sys.stderr.write("HEAVY=" + json.dumps(heavy) + "\\n")
"""


def loaded_heavy_modules(
    args: list[str], *, fake_embedder: bool = False, watched: tuple[str, ...] = HEAVY
) -> set[str]:
    code = PROBE.format(fake=fake_embedder, tests=str(TESTS), watched=watched)
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    line = [text for text in done.stderr.splitlines() if text.startswith("HEAVY=")][-1]
    return {name.split(".")[0] for name in json.loads(line[len("HEAVY=") :])}


@pytest.fixture
def index(isolated_home):
    docs = [
        Document("/a.txt", "The lighthouse lamp warned ships away from the rocks.", "txt"),
        Document("/b.txt", "Reset the router by holding its button for ten seconds.", "txt"),
    ]
    ingest_documents(
        isolated_home, docs, embedder=HashEmbedder(), group="medium", chunking=ChunkSettings("word", 100, 0)
    )
    return isolated_home


def test_help_imports_no_model_runtime():
    assert loaded_heavy_modules(["--help"]) == set()
    assert loaded_heavy_modules(["query", "--help"]) == set()
    assert loaded_heavy_modules(["mcp", "--help"]) == set()
    assert loaded_heavy_modules(["ingest", "--help"]) == set()


def test_get_imports_no_model_runtime(index):
    assert loaded_heavy_modules(["get", "/a.txt"]) == set()


def test_bm25_query_imports_no_model_runtime(index):
    assert loaded_heavy_modules(["query", "lighthouse", "--mode", "bm25", "--json"]) == set()


def test_a_small_bm25_query_does_not_import_numpy(index):
    # Importing numpy costs more than scoring a few thousand postings in plain Python.
    for extra in (["--json"], [], ["--filter", "file_type=txt"]):
        args = ["query", "lighthouse", "--mode", "bm25", *extra]
        assert loaded_heavy_modules(args, watched=("numpy",)) == set()


def test_dense_query_does_not_import_torch(index):
    # The fake embedder stands in for the ONNX one; the vector index still loads FAISS.
    assert loaded_heavy_modules(["query", "lighthouse", "--mode", "dense"], fake_embedder=True) == {"faiss"}


@pytest.mark.slow
def test_dense_query_with_the_real_model_does_not_import_torch(tmp_path, monkeypatch, model_cache_dir):
    from ragcli.config import load_settings
    from ragcli.generation.chooser import embedder_for

    embedder = embedder_for(load_settings())
    index = tmp_path / "real-index"
    ingest_documents(
        index,
        [Document("/a.txt", "The lighthouse lamp warned ships.", "txt")],
        embedder=embedder,
        group="medium",
    )
    monkeypatch.setenv("RAG_INDEX", str(index))
    assert loaded_heavy_modules(["query", "a lamp by the sea", "--mode", "dense"]) <= {"faiss", "onnxruntime"}
