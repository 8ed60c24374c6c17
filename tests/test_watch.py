"""`rag ingest DIR --watch`: a real watcher process (the installed `rag`, real watchfiles, the
default embedding model) driven through create, modify, editor save, rename, delete, files
vanishing mid-read and a 1,000-file burst, the index checked from other processes after each.

Only generous deadlines: every check polls until it holds or a minute or more has passed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

RAG = shutil.which("rag") or "rag"
DEADLINE = 180.0


def rag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([RAG, *args], capture_output=True, text=True, timeout=300)


def indexed(index: Path) -> set[str]:
    result = rag("ls", "--json", "--index", str(index))
    if result.returncode != 0:
        return set()
    return {doc["path"] for doc in json.loads(result.stdout)["documents"]}


def bm25_paths(index: Path, words: str) -> list[str]:
    result = rag("query", words, "--mode", "bm25", "--format", "paths", "--index", str(index))
    assert result.returncode in (0, 1), result.stderr
    return result.stdout.split()


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


@pytest.fixture
def watcher(tmp_path, isolated_home):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text("The lighthouse keeper polished the brass lens.", encoding="utf-8")
    err = (tmp_path / "watch.err").open("w")
    out = (tmp_path / "watch.out").open("w")
    process = subprocess.Popen([RAG, "ingest", str(folder), "--watch", "--index", str(isolated_home)],
                               stdout=out, stderr=err)
    log = tmp_path / "watch.err"
    try:
        eventually(lambda: "watching" in log.read_text() or process.poll() is not None,
                   "the watcher to start")
        assert process.poll() is None, log.read_text()
        yield folder, isolated_home, process, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        err.close()
        out.close()


def test_watcher_follows_create_modify_save_rename_delete_burst_and_stops_on_ctrl_c(watcher):
    folder, index, process, log = watcher
    first = str(folder / "first.md")
    assert indexed(index) == {first}

    note = folder / "note.md"
    note.write_text("Sourdough starter wants rye flour and water every morning.", encoding="utf-8")
    eventually(lambda: str(note) in bm25_paths(index, "sourdough rye"), "a new file to be searchable")

    note.write_text("Glaciers carve deep valleys over thousands of years.", encoding="utf-8")
    eventually(lambda: str(note) in bm25_paths(index, "glaciers valleys"), "an edit to be searchable")
    assert str(note) not in bm25_paths(index, "sourdough rye")

    # An editor's save: write a hidden temp file, then rename it over the original.
    temp = folder / ".note.md.swx"
    temp.write_text("Honey bees dance to show where the clover grows.", encoding="utf-8")
    os.replace(temp, note)
    eventually(lambda: str(note) in bm25_paths(index, "honey clover"), "a temp-then-rename save")
    assert str(note) not in bm25_paths(index, "glaciers valleys")

    renamed = folder / "bees.md"
    note.rename(renamed)
    eventually(lambda: str(renamed) in indexed(index) and str(note) not in indexed(index), "a rename")

    renamed.unlink()
    eventually(lambda: indexed(index) == {first}, "a delete to be pruned")

    # Files that vanish right after they appear, some while being read: never a crash.
    for number in range(40):
        flicker = folder / f"flicker-{number}.txt"
        flicker.write_text(f"short lived note {number} about tidal power", encoding="utf-8")
        flicker.unlink()
    survivor = folder / "survivor.txt"
    survivor.write_text("Violin varnish recipes were closely guarded secrets.", encoding="utf-8")
    eventually(lambda: str(survivor) in indexed(index), "the watcher to carry on after vanishing files")
    assert not any("flicker" in path for path in indexed(index))

    burst = folder / "checkout"
    burst.mkdir()
    for number in range(1000):
        (burst / f"page-{number:04d}.txt").write_text(
            f"Checked out page {number}: notes on topic{number} and river deltas.", encoding="utf-8")
    # Queries from other processes keep working while the burst is ingested.
    during = rag("query", "river deltas", "--mode", "bm25", "--index", str(index), "--format", "paths")
    assert during.returncode == 0, during.stderr
    eventually(lambda: len(indexed(index)) == 1002, "a 1,000-file burst", deadline=600)
    assert str(burst / "page-0421.txt") in bm25_paths(index, "topic421")
    assert process.poll() is None

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=300) == 130
    lines = log.read_text().splitlines()
    assert f"added {note}" in lines and f"updated {note}" in lines
    assert f"added {renamed}" in lines and f"removed {renamed}" in lines and f"removed {note}" in lines
    assert sum(line.startswith(f"added {burst}/") for line in lines) == 1000
    assert not any(line.startswith("failed") for line in lines), lines
    assert len(indexed(index)) == 1002
