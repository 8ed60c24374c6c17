"""What the tests of `rag ingest --watch` share: the index's documents, polling for a condition,
and a real watcher process (the installed `rag`) on a folder of one note."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from runner import rag

RAG = shutil.which("rag") or "rag"
DEADLINE = 180.0


def indexed(index: Path) -> set[str]:
    result = rag("ls", "--json", "--index", str(index))
    if result.returncode != 0:
        return set()
    return {doc["path"] for doc in json.loads(result.stdout)["documents"]}


def eventually(check, what: str, deadline: float = DEADLINE):
    """Poll `check` until it returns a true value; fail with `what` after `deadline` seconds."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for: {what}")
        time.sleep(0.5)


def watcher_fixture():
    """The `watcher` fixture, for a test module to bind as ``watcher = watcher_fixture()``:
    (folder, index, process, stderr log) of a running `rag ingest FOLDER --watch`."""

    @pytest.fixture
    def watcher(tmp_path, isolated_home):
        folder = tmp_path / "notes"
        folder.mkdir()
        (folder / "first.md").write_text("The lighthouse keeper polished the brass lens.", encoding="utf-8")
        err = (tmp_path / "watch.err").open("w")
        out = (tmp_path / "watch.out").open("w")
        process = subprocess.Popen(
            [RAG, "ingest", str(folder), "--watch", "--index", str(isolated_home)], stdout=out, stderr=err
        )
        log = tmp_path / "watch.err"
        try:
            eventually(
                lambda: "watching" in log.read_text() or process.poll() is not None, "the watcher to start"
            )
            assert process.poll() is None, log.read_text()
            yield folder, isolated_home, process, log
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            err.close()
            out.close()

    return watcher
