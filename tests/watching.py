"""What the tests of `rag ingest --watch` share: the index's documents, polling for a condition,
and a real watcher process (the installed `rag`) on a folder of one note."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

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


@contextmanager
def running_watcher(target: Path, log: Path, *options: str) -> Iterator[subprocess.Popen]:
    """A `rag ingest TARGET --watch` process with its stderr in `log`, once it says it is
    watching (or has ended: the caller checks); killed on the way out if still running."""
    with log.open("w") as err:
        process = subprocess.Popen(
            [RAG, "ingest", str(target), "--watch", *options], stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            eventually(
                lambda: "watching" in log.read_text() or process.poll() is not None, "the watcher to start"
            )
            yield process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def watcher_fixture():
    """The `watcher` fixture, for a test module to bind as ``watcher = watcher_fixture()``:
    (folder, index, process, stderr log) of a running `rag ingest FOLDER --watch`."""

    @pytest.fixture
    def watcher(tmp_path, isolated_home):
        folder = tmp_path / "notes"
        folder.mkdir()
        (folder / "first.md").write_text("The lighthouse keeper polished the brass lens.", encoding="utf-8")
        log = tmp_path / "watch.err"
        with running_watcher(folder, log, "--index", str(isolated_home)) as process:
            assert process.poll() is None, log.read_text()
            yield folder, isolated_home, process, log

    return watcher
