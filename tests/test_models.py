"""`rag models`: GGUF headers read without loading weights, and the models a user already has."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

import pytest

from ragcli.config import load_settings
from ragcli.errors import ModelNotFound
from ragcli.generation.gguf import NotGGUF, read_gguf, write_tiny_gguf
from ragcli.generation.catalog import list_models, resolve_model
from runner import rag

TINY_META = {
    "general.architecture": "llama",
    "general.name": "Tiny Test",
    "general.file_type": 15,
    "llama.context_length": 4096,
    "tokenizer.chat_template": "{{ messages }}",
}
TINY_TENSORS = {"token_embd.weight": (16, 8), "output.weight": (8, 16), "norm": (8,)}


def test_header_reader_reads_what_the_file_says(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf", TINY_META, TINY_TENSORS)
    info = read_gguf(path)
    assert (info.architecture, info.name, info.quantisation, info.context_length) == (
        "llama",
        "Tiny Test",
        "Q4_K_M",
        4096,
    )
    assert info.parameters == 16 * 8 * 2 + 8 and info.chat_template and info.size == path.stat().st_size


def test_header_reader_refuses_other_files(tmp_path):
    (tmp_path / "x.gguf").write_bytes(b"not a model at all")
    (tmp_path / "cut.gguf").write_bytes(write_tiny_gguf(tmp_path / "t.gguf", TINY_META, {}).read_bytes()[:30])
    for name in ("x.gguf", "cut.gguf"):
        with pytest.raises(NotGGUF):
            read_gguf(tmp_path / name)


def test_bundled_model_header(isolated_home):
    bundled = next(entry for entry in list_models(load_settings()) if entry.name == "smollm2-135m")
    assert bundled.info.architecture == "llama" and bundled.info.chat_template
    assert 100e6 < bundled.info.parameters < 200e6 and bundled.info.quantisation == "Q4_1"


def ollama_folder(home) -> tuple:
    """An Ollama models folder: a manifest naming a blob that is a tiny GGUF."""
    root = home / ".ollama" / "models"
    home.mkdir(parents=True, exist_ok=True)
    blob_data = write_tiny_gguf(home / "tmp.gguf", TINY_META, TINY_TENSORS).read_bytes()
    digest = "sha256:" + hashlib.sha256(blob_data).hexdigest()
    (root / "blobs").mkdir(parents=True)
    blob = root / "blobs" / digest.replace(":", "-")
    blob.write_bytes(blob_data)
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / "tinyllm" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "layers": [
                    {
                        "mediaType": "application/vnd.ollama.image.model",
                        "digest": digest,
                        "size": len(blob_data),
                    },
                    {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:00", "size": 2},
                ],
            }
        )
    )
    hub = home / ".cache" / "huggingface" / "hub" / "models--x--y" / "snapshots" / "abc"
    hub.mkdir(parents=True)
    shutil.copy(blob, hub / "Other-Model.Q4_K_M.gguf")
    (hub / "notes.gguf").write_text("not a gguf")  # skipped, not an error
    return blob, hub / "Other-Model.Q4_K_M.gguf"


def test_rag_models_lists_ollama_and_hub_models_through_the_real_rag(tmp_path, isolated_home):
    home = tmp_path / "home"
    blob, hub_file = ollama_folder(home)
    env = {**os.environ, "HOME": str(home)}
    for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE"):
        env.pop(name, None)
    done = rag("models", "--json", env=env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    found = {model["name"]: model for model in doc["models"]}
    assert doc["kind"] == "models" and "smollm2-135m" in found
    tiny = found["tinyllm:latest"]
    assert tiny["origin"] == "ollama" and tiny["path"] == str(blob) and tiny["quantisation"] == "Q4_K_M"
    assert tiny["parameters"] == 264 and tiny["context_length"] == 4096 and tiny["chat_template"] is True
    assert tiny["generative"] is False
    assert found["other-model.q4_k_m"]["path"] == str(hub_file)
    assert not any(m["path"] and m["path"].endswith("notes.gguf") for m in doc["models"])
    table = rag("models", env=env)
    assert table.returncode == 0 and "tinyllm:latest" in table.stdout and table.stderr == ""
    # In a pipe: a header and one tab-separated line per model, no cell cut short.
    header, *rows = [line.split("\t") for line in table.stdout.splitlines()]
    assert header[0] == "name" and header[-1] == "path"
    assert {row[0]: row[-1] for row in rows} == {m["name"]: m["path"] or "-" for m in doc["models"]}
    # The name works as --model: resolved to the blob in place (never copied).
    monkeypatched = {"HOME": str(home)}
    old = {key: os.environ.get(key) for key in monkeypatched}
    os.environ.update(monkeypatched)
    try:
        assert resolve_model("tinyllm:latest", load_settings()) == blob
        with pytest.raises(ModelNotFound, match="rag models"):
            resolve_model("no-such-model", load_settings())
    finally:
        for key, value in old.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


def test_short_names_resolve_to_files_and_paths_pass_through(tmp_path, isolated_home):
    from ragcli.config import default_gguf_path

    settings = load_settings()
    assert resolve_model("smollm2-135m", settings) == default_gguf_path()
    assert resolve_model(None, settings) == default_gguf_path()
    assert resolve_model(str(tmp_path / "x.gguf"), settings) == tmp_path / "x.gguf"


def test_rag_eval_answers_accepts_a_model_name(tmp_path, isolated_home):
    """`--model NAME` reaches `rag eval answers` (an unknown name: one line, exit 1, lists names)."""
    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"_id": "q1", "question": "Who?", "answers": ["x"]}) + "\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Somebody wrote this page about bees.")
    assert rag("ingest", str(docs)).returncode == 0
    bad = subprocess.run(
        ["rag", "eval", "answers", str(qa), "--model", "no-such-model"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 1 and "smollm2-135m" in bad.stderr and bad.stderr.count("\n") == 1
    good = subprocess.run(
        ["rag", "eval", "answers", str(qa), "--model", "smollm2-135m", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["configurations"][0]["metrics"]["abstained"] is not None
