"""`rag doctor` through the real entry point with the real default models."""

from __future__ import annotations

import json

import pytest

from runner import rag


@pytest.fixture
def healthy_index(tmp_path, isolated_home):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kites.md").write_text("# Kites\n\nBox kites were invented by Lawrence Hargrave in 1893.")
    (docs / "copy.md").write_text("# Kites\n\nBox kites were invented by Lawrence Hargrave in 1893.")
    assert rag("ingest", str(docs)).returncode == 0
    return isolated_home


@pytest.mark.model
def test_doctor_passes_on_a_healthy_index(healthy_index):
    result = rag("doctor", "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0, report
    assert report["ok"] and {c["name"] for c in report["checks"]} >= {
        "embedding model",
        "llama.cpp",
        "GGUF model",
        "disk space",
        "index opens",
        "sqlite integrity",
        "vectors (medium)",
        "model fingerprint",
    }


@pytest.mark.model
def test_doctor_flags_a_missing_vector_file_and_ingest_repairs_it(healthy_index, tmp_path):
    (healthy_index / "vectors" / "medium.json").unlink()
    result = rag("doctor", "--json")
    assert result.returncode == 1
    failed = [c for c in json.loads(result.stdout)["checks"] if not c["ok"]]
    assert [c["name"] for c in failed] == ["vectors (medium)"] and "rag ingest" in failed[0]["fix"]
    assert rag("ingest").returncode == 0
    assert rag("doctor").returncode == 0


@pytest.mark.model
def test_doctor_without_an_index_says_how_to_create_one(isolated_home):
    result = rag("doctor")
    assert result.returncode == 1
    assert "rag ingest" in result.stdout
