"""A watched folder whose shape changes: symlinks (to a folder, to itself, to a file inside),
a file replaced by a folder of its name, the watched folder moved away and back, editors'
lock files. The watcher must index what a whole `rag ingest` of the folder would, no more.

A real watcher process (`python -m ragcli`, this checkout's code, real watchfiles, the default
embedding model). Changes are applied in the order they happen, so a sentinel file written
last and seen in the index means every change before it was applied: no timing is assumed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner import rag

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
        time.sleep(0.3)


@pytest.fixture
def watcher(tmp_path, isolated_home):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text("The lighthouse keeper polished the brass lens.", encoding="utf-8")
    log = tmp_path / "watch.err"
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragcli", "ingest", str(folder), "--watch", "--index", str(isolated_home)],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            eventually(lambda: "watching" in log.read_text() or process.poll() is not None, "the watcher")
            assert process.poll() is None, log.read_text()
            yield folder, isolated_home, process, log
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def armed(folder: Path, index: Path) -> None:
    """Wait until the notifier reports changes: a file written after "watching" is applied
    by the notifier's sets or by the catch-up its first set brings, after it is armed; what
    changed before that is read by a whole ingest, not by the watcher's own path."""
    (folder / "armed.md").write_text("The notifier is armed once this note is indexed.", encoding="utf-8")
    eventually(lambda: str(folder / "armed.md") in indexed(index), "the notifier to be armed")


def test_watcher_does_not_follow_symlinked_folders_or_links_to_its_own_files(watcher, tmp_path):
    """A whole ingest never enters a symlinked folder and skips a link to a file of the folder;
    the watcher read `loop -> .` as a second copy of every file, and a linked folder elsewhere
    as documents of this one."""
    folder, index, process, log = watcher
    armed(folder, index)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "penguins.md").write_text("Emperor penguins huddle through the winter.", encoding="utf-8")
    (folder / "loop").symlink_to(".", target_is_directory=True)
    (folder / "linked").symlink_to(elsewhere, target_is_directory=True)
    (folder / "again.md").symlink_to(folder / "first.md")
    (folder / "outside.md").symlink_to(elsewhere / "penguins.md")
    sentinel = folder / "sentinel.md"
    sentinel.write_text("Written after the links: every link was applied before it.", encoding="utf-8")

    eventually(lambda: str(sentinel) in indexed(index), "the sentinel to be indexed")
    expected = {str(folder / name) for name in ("first.md", "armed.md", "outside.md", "sentinel.md")}
    assert indexed(index) == expected
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=300) == 130
    assert indexed(index) == expected
    # A whole ingest agrees with the watcher, and has nothing to keep back.
    again = rag("ingest", str(folder), "--index", str(index))
    assert again.returncode == 0, again.stderr
    assert "leave out" not in again.stderr and indexed(index) == expected


def test_a_file_replaced_by_a_folder_of_its_name_leaves_the_index(tmp_path, fake_embedder):
    """The watcher hands over the path, now a folder: its files are read and the document of
    the file it replaced is removed (it stayed, listed and searchable, forever)."""
    from ragcli.ingest.changes import ingest_changes
    from ragcli.ingest.pipeline import ingest
    from ragcli.store.status import list_documents
    from ragcli.types import ChunkSettings

    folder, index = tmp_path / "docs", tmp_path / "index"
    folder.mkdir()
    (folder / "plan.md").write_text("The plan: windmills on the ridge.")
    (folder / "other.md").write_text("Another note about orchards.")
    settings = dict(embedder=fake_embedder, chunking=ChunkSettings("word", 50, 0))
    ingest(index, [folder], **settings)

    (folder / "plan.md").unlink()
    (folder / "plan.md").mkdir()
    (folder / "plan.md" / "ridge.md").write_text("Windmills now have a folder of their own.")
    changed = [folder / "plan.md", folder / "plan.md" / "ridge.md"]
    report = ingest_changes(index, [folder], changed, **settings)

    paths = {doc["path"] for doc in list_documents(index)}
    assert paths == {str(folder / "other.md"), str(folder / "plan.md" / "ridge.md")}
    assert (report.added, report.removed) == (1, 1)


def test_a_whole_ingest_removes_a_file_now_a_folder_instead_of_keeping_it(tmp_path, isolated_home):
    """`rag ingest` kept the old file's document, saying --include/--exclude left it out though
    none was given; it is gone, and `rag ls` says so."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "plan.md").write_text("The plan: windmills on the ridge.", encoding="utf-8")
    assert rag("ingest", str(folder)).returncode == 0
    (folder / "plan.md").unlink()
    (folder / "plan.md").mkdir()
    (folder / "plan.md" / "ridge.md").write_text("Windmills now have a folder.", encoding="utf-8")

    result = rag("ingest", str(folder))
    assert result.returncode == 0, result.stderr
    assert "leave out" not in result.stderr
    assert "1 added" in result.stderr and "1 removed" in result.stderr
    assert indexed(isolated_home) == {str(folder / "plan.md" / "ridge.md")}
