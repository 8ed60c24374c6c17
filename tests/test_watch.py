"""`rag ingest DIR --watch`: a real watcher process (the installed `rag`, real watchfiles, the
default embedding model) driven through create, modify, editor save, rename, delete, files
vanishing mid-read and a 1,000-file burst, the index checked from other processes after each.

Only generous deadlines: every check polls until it holds or a minute or more has passed.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


from runner import rag
from watching import eventually, indexed, watcher_fixture


def bm25_paths(index: Path, words: str) -> list[str]:
    result = rag("query", words, "--mode", "bm25", "--format", "paths", "--index", str(index))
    assert result.returncode in (0, 1), result.stderr
    return result.stdout.split()


watcher = watcher_fixture()


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
            f"Checked out page {number}: notes on topic{number} and river deltas.", encoding="utf-8"
        )
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


# -- the library underneath: ingest_changes and watch() with the hashing fake embedder ------------
def _paths(index: Path) -> set[str]:
    from ragcli.store.status import list_documents

    return {doc["path"] for doc in list_documents(index)}


def test_ingest_changes_touches_only_what_changed(tmp_path, fake_embedder):
    from ragcli.ingest.changes import ingest_changes
    from ragcli.ingest.pipeline import ingest
    from ragcli.types import ChunkSettings

    folder, index = tmp_path / "docs", tmp_path / "index"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / f"{name}.md").write_text(f"Note {name} about harbour lights and {name} things.")
    (folder / "skip.bin").write_bytes(b"\x00\x01")
    settings = dict(embedder=fake_embedder, chunking=ChunkSettings("word", 50, 0))
    ingest(index, [folder], **settings)
    fake_embedder.embedded_texts.clear()

    (folder / "a.md").write_text("Note a rewritten: glaciers and fjords.")
    (folder / "b.md").rename(folder / "b2.md")
    (folder / "c.md").unlink()
    (folder / "sub").mkdir()
    (folder / "sub" / "d.md").write_text("Note d in a new folder about tides.")
    changed = [
        folder / "a.md",
        folder / "b.md",
        folder / "b2.md",
        folder / "c.md",
        folder / "sub",
        folder / "vanished.md",
        folder / ".hidden.md",
        tmp_path / "elsewhere.md",
    ]
    report = ingest_changes(index, [folder], changed, **settings)

    assert _paths(index) == {str(folder / "a.md"), str(folder / "b2.md"), str(folder / "sub" / "d.md")}
    assert (report.added, report.updated, report.removed, report.failed) == (2, 1, 2, [])
    # Only the new texts were embedded: the renamed file's chunk was reused by its hash.
    assert sorted(fake_embedder.embedded_texts) == [
        "Note a rewritten: glaciers and fjords.",
        "Note d in a new folder about tides.",
    ]


def test_changes_get_the_ignore_files_and_patterns_a_whole_ingest_applies(tmp_path, fake_embedder):
    """A watcher reports paths one by one: a changed file under an ignored folder, a file a
    parent's .gitignore names, a new folder of build output, or a file an --exclude pattern
    (relative to the root) leaves out are not read, as a whole ingest would not read them."""
    from ragcli.ingest.changes import ingest_changes
    from ragcli.ingest.pipeline import ingest
    from ragcli.ingest.walk import FileFilter
    from ragcli.types import ChunkSettings

    folder, index = tmp_path / "repo", tmp_path / "index"
    (folder / "notes").mkdir(parents=True)
    (folder / ".gitignore").write_text("*.log.md\ngenerated/\n")
    (folder / "notes" / ".ragignore").write_text("private.md\n")
    (folder / "notes" / "kept.md").write_text("Kept note about tides.")
    settings = dict(
        embedder=fake_embedder,
        chunking=ChunkSettings("word", 50, 0),
        file_filter=FileFilter(exclude=("drafts/*",)),
    )
    ingest(index, [folder], **settings)

    (folder / "notes" / "run.log.md").write_text("a log the root .gitignore names")
    (folder / "notes" / "private.md").write_text("a file the folder's .ragignore names")
    (folder / "generated" / "deep").mkdir(parents=True)
    (folder / "generated" / "deep" / "out.md").write_text("generated output")
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / "readme.md").write_text("a dependency")
    (folder / "drafts").mkdir()
    (folder / "drafts" / "d.md").write_text("a draft the pattern excludes")
    (folder / "notes" / "new.md").write_text("A new note about harbours.")
    changed = [
        folder / "notes" / "run.log.md",
        folder / "notes" / "private.md",
        folder / "generated",
        folder / "generated" / "deep" / "out.md",
        folder / "node_modules" / "readme.md",
        folder / "drafts",
        folder / "notes" / "new.md",
    ]
    report = ingest_changes(index, [folder], changed, **settings)

    assert _paths(index) == {str(folder / "notes" / "kept.md"), str(folder / "notes" / "new.md")}
    assert report.added == 1 and report.failed == []


def test_watch_applies_changes_and_commits_what_it_saw_when_stopped(tmp_path, fake_embedder):
    import threading

    from ragcli.ingest.watch import watch

    folder, index = tmp_path / "docs", tmp_path / "index"
    folder.mkdir()
    (folder / "a.md").write_text("Lighthouse keepers polish lenses.")
    stop = threading.Event()
    batches = watch(index, [folder], embedder=fake_embedder, stop=stop)
    initial = next(batches)
    assert initial.kind == "initial" and [c.status for c in initial.changes] == ["added"]

    def edit_then_stop():
        time.sleep(1.0)
        (folder / "b.md").write_text("Sourdough needs rye flour.")
        time.sleep(2.0)
        (folder / "c.md").write_text("Written just before the stop.")
        stop.set()

    threading.Thread(target=edit_then_stop).start()
    rest = list(batches)
    assert rest[-1].kind == "final"
    seen = [(c.status, Path(c.path).name) for batch in rest for c in batch.changes]
    assert ("added", "b.md") in seen and ("added", "c.md") in seen
    assert _paths(index) == {str(folder / name) for name in ("a.md", "b.md", "c.md")}


def test_a_file_written_before_the_notifier_is_armed_is_not_missed(tmp_path, fake_embedder):
    """Between the catch-up ingest and the notifier's start (here: while the caller holds the
    first batch) a change is never reported by the notifier; the watch still applies it."""
    import threading

    from ragcli.ingest.watch import watch

    folder, index = tmp_path / "docs", tmp_path / "index"
    folder.mkdir()
    (folder / "a.md").write_text("Lighthouse keepers polish lenses.")
    stop = threading.Event()
    batches = watch(index, [folder], embedder=fake_embedder, stop=stop)
    assert next(batches).kind == "initial"
    (folder / "b.md").write_text("Written before the notifier was armed.")
    safety_net = threading.Timer(60, stop.set)  # a hung watch ends, and the test fails below
    safety_net.start()
    try:
        batch = next(batches)
    finally:
        stop.set()
        safety_net.cancel()
        list(batches)
    assert batch.kind == "changes" and [(c.status, Path(c.path).name) for c in batch.changes] == [
        ("added", "b.md")
    ]
