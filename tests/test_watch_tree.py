"""A watched folder whose shape changes: symlinks (to a folder, to itself, to a file inside),
a file replaced by a folder of its name, the watched folder moved away and back, editors'
lock files. The watcher must index what a whole `rag ingest` of the folder would, no more.

A real watcher process (the installed `rag`, real watchfiles, the default embedding model).
Changes are applied in the order they happen, so a sentinel file written
last and seen in the index means every change before it was applied: no timing is assumed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runner import rag
from watching import eventually, indexed, running_watcher, watcher_fixture


watcher = watcher_fixture()


def armed(folder: Path, index: Path) -> None:
    """Wait until the notifier reports changes: a file written after "watching" is applied
    by the notifier's sets or by the catch-up its first set brings, after it is armed; what
    changed before that is read by a whole ingest, not by the watcher's own path."""
    # Written aside and renamed in: one event, so one set of changes brings the file, and once
    # it is listed only that set's end (under the index's write lock) may still be running.
    temp = folder / ".armed.md.tmp"
    temp.write_text("The notifier is armed once this note is indexed.", encoding="utf-8")
    os.replace(temp, folder / "armed.md")
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


def test_the_watched_folder_moved_away_keeps_its_documents_and_is_watched_again_when_back(watcher, tmp_path):
    """Moving the folder away (or unmounting its disk) removed every document, and a folder
    made again at its path was never watched; now its documents are kept, as `rag ingest`
    keeps a folder that is gone, and the new folder is caught up with and watched."""
    folder, index, process, log = watcher
    armed(folder, index)
    before = indexed(index)
    folder.rename(tmp_path / "away")
    eventually(lambda: f"missing {folder}:" in log.read_text(), "the watcher to say the folder is gone")
    assert indexed(index) == before

    folder.mkdir()
    otters = folder / "otters.md"
    otters.write_text("Sea otters hold hands while they sleep.", encoding="utf-8")
    eventually(
        lambda: indexed(index) == {str(otters)}, "the new folder to be read and the old documents pruned"
    )
    voles = folder / "voles.md"
    voles.write_text("Water voles dig burrows in river banks.", encoding="utf-8")
    eventually(lambda: indexed(index) == {str(otters), str(voles)}, "the new folder to be watched")

    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=300) == 130
    lines = log.read_text().splitlines()
    assert f"back {folder}: reading what changed, then watching it again" in lines
    assert f"removed {folder / 'first.md'}" in lines and f"added {otters}" in lines


def test_ctrl_c_while_the_watched_folder_is_gone_stops_cleanly(watcher, tmp_path):
    """The last catch-up read the missing folder and failed: `rag: error: ... no such file`,
    exit 1. It reads only what is there: exit 130, the documents kept."""
    folder, index, process, log = watcher
    armed(folder, index)
    before = indexed(index)
    folder.rename(tmp_path / "away")
    eventually(lambda: f"missing {folder}:" in log.read_text(), "the watcher to say the folder is gone")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=300) == 130, log.read_text()
    assert "stopped; everything seen is committed" in log.read_text()
    assert indexed(index) == before


def test_a_watched_file_is_followed_through_every_editor_save(tmp_path, isolated_home):
    """An editor saves by writing a temp file and renaming it over the original: the notifier
    watched the replaced file, so the second save was not seen until Ctrl-C."""
    note = tmp_path / "notes" / "birds.md"
    note.parent.mkdir()
    note.write_text("Herons stand still in the shallows.", encoding="utf-8")
    log = tmp_path / "watch.err"
    with running_watcher(note, log) as process:
        for word in ("cranes", "storks", "egrets"):
            temp = note.parent / ".birds.md.tmp"
            temp.write_text(f"Now the note is about {word} nesting on roofs.", encoding="utf-8")
            os.replace(temp, note)
            eventually(lambda word=word: search(isolated_home, word) == [str(note)], f"the save with {word}")
        assert process.poll() is None, log.read_text()


def search(index: Path, words: str) -> list[str]:
    result = rag("query", words, "--mode", "bm25", "--format", "paths", "--index", str(index))
    return result.stdout.split() if result.returncode == 0 else []


def test_files_deleted_while_not_watching_get_a_removed_line(tmp_path, isolated_home):
    """The catch-up at the start said `added` for each new file but nothing for deleted ones,
    though it removed them."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "keep.md").write_text("Kept: a note on tides.", encoding="utf-8")
    (folder / "gone.md").write_text("Deleted later: a note on comets.", encoding="utf-8")
    assert rag("ingest", str(folder)).returncode == 0
    (folder / "gone.md").unlink()
    log = tmp_path / "watch.err"
    with running_watcher(folder, log) as process:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=300) == 130
    assert f"removed {folder / 'gone.md'}" in log.read_text().splitlines()
    assert indexed(isolated_home) == {str(folder / "keep.md")}


def test_office_owner_files_are_not_documents(tmp_path, isolated_home):
    """Word keeps `~$name.docx` beside a document while it is open: every ingest and every
    watcher batch said `failed ... not a valid DOCX file; re-save it from Word`, and `--strict`
    exited 1, for a file that is not the user's."""
    import docx

    folder = tmp_path / "reports"
    folder.mkdir()
    document = docx.Document()
    document.add_paragraph("Quarterly report on orchard yields.")
    document.save(folder / "report.docx")
    (folder / "~$report.docx").write_bytes(
        b"\x0bJohn Smith" + b"\x00" * 40 + "John Smith".encode("utf-16-le")
    )

    result = rag("ingest", str(folder), "--strict")
    assert result.returncode == 0, result.stderr
    assert "failed" not in result.stderr.replace("0 failed", "")
    assert indexed(isolated_home) == {str(folder / "report.docx")}


def test_a_folder_made_unreadable_while_watched_is_one_failure_not_a_crash(tmp_path, isolated_home):
    """`chmod 000` on a watched subfolder ended the watcher with a traceback (PermissionError);
    now it is one `failed` line, its documents are kept, and the watch goes on."""
    from test_walk import as_a_user

    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "in.txt").write_text("a file no user can read", encoding="utf-8")
    probe.chmod(0)
    try:
        wrapper = as_a_user(probe)
    finally:
        probe.chmod(0o755)
    if wrapper is None:
        pytest.skip("this process reads a chmod-000 folder and cannot drop that power (no setpriv)")
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "first.md").write_text("The lighthouse keeper polished the brass lens.", encoding="utf-8")
    kites = folder / "sub" / "kites.md"
    kites.write_text("Red kites circle above the motorway verges.", encoding="utf-8")
    log = tmp_path / "watch.err"
    command = [*wrapper, sys.executable, "-m", "ragcli", "ingest", str(folder), "--watch"]
    with log.open("w") as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        try:
            eventually(lambda: "watching" in log.read_text() or process.poll() is not None, "the watcher")
            armed(folder, isolated_home)
            (folder / "sub").chmod(0)
            owls = folder / "owls.md"
            owls.write_text("Barn owls hunt by sound alone.", encoding="utf-8")
            eventually(
                lambda: str(owls) in indexed(isolated_home) or process.poll() is not None, "the next change"
            )
            assert process.poll() is None, log.read_text()
            assert f"failed {folder / 'sub'}: cannot read (Permission denied)" in log.read_text()
            assert str(kites) in indexed(isolated_home)
        finally:
            (folder / "sub").chmod(0o755)
            if process.poll() is None:
                process.kill()
                process.wait()


def test_a_dangling_link_made_while_watched_is_reported_as_a_whole_ingest_reports_it(tmp_path, fake_embedder):
    """A link to nothing (or to itself) was passed over in silence by the watcher, while
    `rag ingest` of the folder says `failed` for each."""
    from ragcli.ingest.changes import ingest_changes
    from ragcli.ingest.pipeline import ingest
    from ragcli.types import ChunkSettings

    folder, index = tmp_path / "docs", tmp_path / "index"
    folder.mkdir()
    (folder / "note.md").write_text("A note about lighthouses.")
    settings = dict(embedder=fake_embedder, chunking=ChunkSettings("word", 50, 0))
    ingest(index, [folder], **settings)
    (folder / "dead.md").symlink_to(folder / "nowhere.md")
    (folder / "self.md").symlink_to(folder / "self.md")

    report = ingest_changes(index, [folder], [folder / "dead.md", folder / "self.md"], **settings)
    whole = ingest(index, [folder], **settings)
    assert [failure.path for failure in report.failed] == [str(folder / "dead.md"), str(folder / "self.md")]
    assert [failure.path for failure in whole.failed] == [failure.path for failure in report.failed]
    assert report.removed == 0


def test_the_index_deleted_while_watching_stops_the_watch(watcher):
    """Deleting the index made the next set of changes a new index of those files alone, which
    `rag status` and `rag ls` showed as the whole; the watch now stops and says why."""
    import shutil

    from ragcli.locking import index_writer

    folder, index, process, log = watcher
    armed(folder, index)
    with index_writer(index):  # the watcher is done writing: its sets hold this lock
        shutil.rmtree(index)
    (folder / "owls.md").write_text("Barn owls hunt by sound alone.", encoding="utf-8")
    eventually(lambda: process.poll() is not None, "the watcher to stop")
    assert process.returncode == 1
    assert f"the index at {index} was deleted while watching" in log.read_text()
    assert not index.exists()


def test_a_file_replaced_by_a_link_to_another_file_of_the_folder_leaves_the_index(tmp_path, fake_embedder):
    """`ln -sf first.md alias.md`: a whole ingest skips a link to a file of the folder (the file
    is read as itself), yet the old alias.md stayed, with its old text, through the watcher and
    through `rag ingest` (which said --include/--exclude left it out)."""
    from ragcli.ingest.changes import ingest_changes
    from ragcli.ingest.pipeline import ingest
    from ragcli.store.status import list_documents
    from ragcli.types import ChunkSettings

    folder, index = tmp_path / "docs", tmp_path / "index"
    folder.mkdir()
    (folder / "first.md").write_text("The first note, about lighthouses.")
    (folder / "alias.md").write_text("An old note about windmills.")
    settings = dict(embedder=fake_embedder, chunking=ChunkSettings("word", 50, 0))
    ingest(index, [folder], **settings)
    (folder / "alias.md").unlink()
    (folder / "alias.md").symlink_to(folder / "first.md")

    report = ingest_changes(index, [folder], [folder / "alias.md"], **settings)
    assert report.removed == 1
    assert {doc["path"] for doc in list_documents(index)} == {str(folder / "first.md")}

    (folder / "other.md").write_text("Another old note about orchards.")
    ingest(index, [folder], **settings)
    (folder / "other.md").unlink()
    (folder / "other.md").symlink_to(folder / "first.md")
    whole = ingest(index, [folder], **settings)
    assert (whole.removed, whole.left_out) == (1, [])
    assert {doc["path"] for doc in list_documents(index)} == {str(folder / "first.md")}
