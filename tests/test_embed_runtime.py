"""`--embed-runtime int8`: its own fingerprint, used by later commands without the flag."""

from __future__ import annotations

import json

from runner import rag


def test_an_int8_index_keeps_its_runtime_and_refuses_to_mix(tmp_path, isolated_home):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "zebra.txt").write_text("The quagga was a subspecies of plains zebra, extinct since 1883.")
    (docs / "tea.txt").write_text("Black tea is oxidised longer than green tea.")
    built = rag("ingest", str(docs), "--embed-runtime", "int8")
    assert built.returncode == 0, built.stderr
    assert "rag:" not in built.stderr  # onnxruntime's advice while quantising stays off the terminal
    info = json.loads(rag("status", "--json").stdout)
    assert info["fingerprint"].endswith("-int8pc")
    hit = rag("query", "extinct zebra", "--mode", "dense", "-k", "1")  # no flag: the index's runtime
    assert hit.returncode == 0, hit.stderr
    assert "zebra.txt" in hit.stdout

    fp32 = tmp_path / "fp32"
    assert rag("ingest", str(docs), "--index", str(fp32)).returncode == 0
    mixed = rag("ingest", str(docs), "--index", str(fp32), "--embed-runtime", "int8")
    assert mixed.returncode == 1
    assert "built with the fp32 embedding runtime, not int8" in mixed.stderr
    assert "--rebuild --embed-runtime int8" in mixed.stderr
