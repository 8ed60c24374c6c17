"""Ingest orchestration with a deterministic fake embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import HashEmbedder
from ragcli.errors import IndexMismatch, UsageError
from ragcli.ingest.pipeline import ingest, remove_paths
from ragcli.retrieval.dense import DenseRetriever
from ragcli.store.status import index_status, list_documents
from ragcli.store.local.database import Store
from ragcli.types import ChunkSettings
from ragcli.ingest.walk import FileFilter

WORDS = ChunkSettings("word", 20, 5)


def write_corpus(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "bread.md").write_text(
        "# Bread\n\n" + "Sourdough bread needs flour water salt and patience. " * 8
    )
    (root / "tea.txt").write_text("Green tea is steamed or pan fired to stop oxidation. " * 6)
    (root / "sub" / "river.txt").write_text("The Danube flows through ten countries to the Black Sea. " * 5)
    (root / ".hidden.txt").write_text("secret notes that must never be indexed")
    (root / "blob.txt").write_bytes(b"\x00\x01binary\x00")
    return root


def run(index: Path, root: Path, embedder, **kwargs):
    kwargs.setdefault("chunking", WORDS)
    return ingest(index, [root], embedder=embedder, group="medium", **kwargs)


def test_first_ingest_stores_documents_chunks_and_vectors(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    report = run(isolated_home, root, HashEmbedder())
    assert (report.added, report.updated, report.unchanged, report.removed) == (3, 0, 0, 0)
    assert report.skipped == 1  # the binary file; the hidden one is never even listed
    status = index_status(isolated_home)
    assert status["documents"] == 3
    assert status["groups"]["medium"]["chunks"] == report.chunks > 3
    assert status["groups"]["medium"]["vectors"] == status["embeddings"] == report.embedded
    assert status["groups"]["medium"]["vectors_current"]
    paths = [d["path"] for d in list_documents(isolated_home)]
    assert not any(".hidden" in p for p in paths)
    assert str((root / "sub" / "river.txt").resolve()) in paths


def test_reingest_of_unchanged_files_embeds_nothing(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    first = run(isolated_home, root, HashEmbedder())
    embedder = HashEmbedder()
    second = run(isolated_home, root, embedder)
    assert second.unchanged == 3 and second.added == second.updated == 0
    assert second.embedded == 0 and embedder.calls == 0
    assert index_status(isolated_home)["chunks"] == first.chunks


def test_a_reader_whose_version_changed_reads_its_files_again(tmp_path, isolated_home, monkeypatch):
    from ragcli.ingest.readers import reader_for

    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    reader = type(reader_for(root / "tea.txt"))
    monkeypatch.setattr(reader, "version", str(int(reader.version) + 1))
    report = run(isolated_home, root, HashEmbedder())
    assert (report.updated, report.unchanged) == (2, 1)  # the two text files, not the Markdown one
    again = run(isolated_home, root, HashEmbedder())
    assert again.unchanged == 3


def test_changed_file_is_rechunked_and_only_new_text_embedded(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    (root / "tea.txt").write_text("Black tea is fully oxidised before drying. " * 6)
    embedder = HashEmbedder()
    report = run(isolated_home, root, embedder)
    assert (report.updated, report.unchanged) == (1, 2)
    assert all("Black tea" in text for text in embedder.embedded_texts)
    store = Store.open(isolated_home)
    texts = [row[0] for row in store.db.execute("SELECT text FROM chunks")]
    assert not any("Green tea" in t for t in texts)
    assert store.count("embeddings") == len(set(texts))  # old vectors dropped
    store.close()


def test_deleted_files_are_pruned_unless_asked_not_to(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    (root / "sub" / "river.txt").unlink()
    kept = run(isolated_home, root, HashEmbedder(), prune=False)
    assert kept.removed == 0 and index_status(isolated_home)["documents"] == 3
    pruned = run(isolated_home, root, HashEmbedder())
    assert pruned.removed == 1 and index_status(isolated_home)["documents"] == 2


def test_identical_chunks_in_different_files_are_embedded_once(tmp_path, isolated_home):
    root = tmp_path / "docs"
    root.mkdir()
    text = "Identical paragraph about lighthouses and their keepers on stormy nights."
    (root / "a.txt").write_text(text)
    (root / "b.txt").write_text(text)
    embedder = HashEmbedder()
    report = run(isolated_home, root, embedder)
    assert report.chunks == 2 and report.embedded == 1 and len(embedder.embedded_texts) == 1


def test_another_model_is_refused_with_the_rebuild_command(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder(64))
    with pytest.raises(IndexMismatch, match="rag ingest --rebuild --embed-model fake-hash-32"):
        run(isolated_home, root, HashEmbedder(32))
    report = run(isolated_home, root, HashEmbedder(32), rebuild=True)
    assert report.added == 3
    assert index_status(isolated_home)["dimension"] == 32


def test_new_chunk_settings_rechunk_every_document(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    first = run(isolated_home, root, HashEmbedder())
    second = run(isolated_home, root, HashEmbedder(), chunking=ChunkSettings("word", 10, 2))
    assert second.updated == 3 and second.chunks > first.chunks
    assert index_status(isolated_home)["groups"]["medium"]["chunk_size"] == 10


def test_groups_live_side_by_side(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    ingest(isolated_home, [root], embedder=HashEmbedder(), group="fine", chunking=ChunkSettings("word", 8, 2))
    groups = index_status(isolated_home)["groups"]
    assert set(groups) == {"medium", "fine"}
    assert groups["fine"]["chunks"] > groups["medium"]["chunks"]


def test_bad_overlap_is_a_usage_error(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    with pytest.raises(UsageError, match="overlap"):
        run(isolated_home, root, HashEmbedder(), chunking=ChunkSettings("word", 10, 10))


def test_include_and_exclude_globs(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    report = run(
        isolated_home, root, HashEmbedder(), file_filter=FileFilter(include=("*.txt",), exclude=("sub/*",))
    )
    assert report.added == 1
    assert [Path(d["path"]).name for d in list_documents(isolated_home)] == ["tea.txt"]


def test_unreadable_file_is_reported_and_the_rest_ingested(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    report = run(isolated_home, root, HashEmbedder())
    assert report.added == 3
    assert [Path(f.path).name for f in report.failed] == ["broken.pdf"]
    assert "broken.pdf" in report.failed[0].reason or report.failed[0].reason


def test_stale_vector_file_is_rebuilt_from_the_database(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    store = Store.open(isolated_home)
    store.set_meta("vectors_generation:medium", 99)  # as if a crash hit between the two writes
    index = store.vector_index("medium")
    assert len(index) == store.count("embeddings")
    query = HashEmbedder().embed(["Danube Black Sea countries"])
    scores, ids = index.search(query, 1)
    chunk_ids = store.chunk_ids_for_embeddings("medium", [int(ids[0][0])])
    chunk = store.chunks(chunk_ids[int(ids[0][0])])
    assert next(iter(chunk.values())).path.endswith("river.txt")
    store.close()


def test_unreadable_vector_file_is_rebuilt_and_rewritten_by_the_next_ingest(tmp_path, isolated_home, caplog):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    store = Store.open(isolated_home)
    store.vector_path("medium").write_bytes(b"garbage")  # params still name the current generation
    searcher = DenseRetriever(store, "medium", HashEmbedder)
    assert searcher.search("Danube Black Sea countries", 1)[0].chunk.path.endswith("river.txt")
    assert "unreadable" in caplog.text
    store.close()
    run(isolated_home, root, HashEmbedder())
    assert store.vector_path("medium").read_bytes()[:4] != b"garb"
    store = Store.open(isolated_home)
    assert len(store.vector_index("medium")) == store.count("embeddings")
    store.close()


def test_rm_removes_documents_and_their_vectors(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    assert remove_paths(isolated_home, [str(root / "sub")]) == 1
    status = index_status(isolated_home)
    assert status["documents"] == 2
    assert status["groups"]["medium"]["vectors"] == status["embeddings"]


def test_last_ingest_and_roots_are_recorded(tmp_path, isolated_home):
    root = write_corpus(tmp_path / "docs")
    run(isolated_home, root, HashEmbedder())
    status = index_status(isolated_home)
    assert status["roots"] == [str(root.resolve())]
    assert status["last_ingest"]["added"] == 3
    params = json.loads((isolated_home / "vectors" / "medium.json").read_text())
    assert params["model"] == "fake-hash-64" and params["dimension"] == 64
    assert params["chunking"] == {"split_by": "word", "chunk_size": 20, "chunk_overlap": 5}


EXPECTED_COLUMNS = {
    "documents": [
        "id",
        "path",
        "file_name",
        "file_type",
        "size",
        "modified",
        "created",
        "title",
        "content_hash",
        "metadata",
        "ingested_at",
    ],
    "chunks": [
        "id",
        "doc_id",
        "group_name",
        "ord",
        "text",
        "start",
        "end",
        "page",
        "hash",
        "embedding_id",
        "tokens",
        "bm25_segment",
    ],
    "bm25_segments": ["id", "group_name", "docs", "length"],
    "bm25_postings": ["group_name", "term", "segment", "chunk_ids", "tfs", "lengths"],
    "embeddings": ["id", "hash", "vector"],
    "groups": ["name", "split_by", "chunk_size", "chunk_overlap", "created_at"],
    "doc_groups": ["doc_id", "group_name", "content_hash"],
    "meta": ["key", "value"],
}


def test_migrations_from_blank(isolated_home):
    store = Store.create(isolated_home)
    for table, columns in EXPECTED_COLUMNS.items():
        assert [row[1] for row in store.db.execute(f"PRAGMA table_info({table})")] == columns
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_migration_names_list_every_migration():
    from ragcli.store.local.migrations import migrations
    from ragcli.store.local.schema import MIGRATION_NAMES

    assert tuple(m.name for m in migrations._migrations) == MIGRATION_NAMES


def test_opening_a_current_index_does_not_import_sqlite_utils(tmp_path, isolated_home):
    import subprocess
    import sys

    Store.create(isolated_home).close()
    code = (
        "import sys; from pathlib import Path; from ragcli.store.local.database import Store; "
        f"Store.open(Path({str(isolated_home)!r})).close(); print('sqlite_utils' in sys.modules)"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )


def test_an_interrupt_hidden_behind_a_readers_clean_up_error_still_stops_the_ingest(
    tmp_path, isolated_home, monkeypatch
):
    """A Ctrl-C that lands while a reader closes its file, whose clean-up then fails (EBADF),
    stops the run; it is not recorded as one failed file with the ingest going on."""
    import ragcli.ingest.run as ingest_run

    def read_interrupted(path):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError(9, "Bad file descriptor") from None

    monkeypatch.setattr(ingest_run, "read_document", read_interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(isolated_home, write_corpus(tmp_path / "docs"), HashEmbedder())


def test_an_interrupted_first_ingest_remembers_its_roots_and_their_patterns(
    tmp_path, isolated_home, monkeypatch
):
    """Ctrl-C during a folder's first ingest kept the documents committed but forgot the folder
    and its --exclude: a bare `rag ingest` then failed ("none ingested before"), and naming the
    folder again read the files it had excluded."""
    import ragcli.ingest.run as ingest_run
    from ragcli.ingest.plan import remembered_options
    from ragcli.ingest.remembered import known_roots
    from ragcli.ingest.walk import FileFilter

    root = write_corpus(tmp_path / "docs")
    real, read = ingest_run.read_document, []

    def read_then_interrupt(path):
        read.append(path)
        if len(read) == 2:
            raise KeyboardInterrupt
        return real(path)

    monkeypatch.setattr(ingest_run, "read_document", read_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run(isolated_home, root, HashEmbedder(), file_filter=FileFilter(exclude=("sub",)))
    assert known_roots(isolated_home) == [str(root.resolve())]
    remembered = remembered_options(isolated_home)[str(root.resolve())]
    assert [options.exclude for options in remembered.values()] == [("sub",)]


def test_an_interrupt_while_a_file_object_takes_its_descriptor_stays_an_interrupt(tmp_path, monkeypatch):
    import os

    from ragcli.ingest.readers import base

    real_fdopen = os.fdopen

    def fdopen_then_interrupt(fd, mode):
        real_fdopen(fd, mode).close()  # the file object owned fd and has closed it
        raise KeyboardInterrupt

    monkeypatch.setattr(base.os, "fdopen", fdopen_then_interrupt)
    (tmp_path / "note.txt").write_text("text")
    with pytest.raises(KeyboardInterrupt):
        base.open_regular(tmp_path / "note.txt")


def test_root_options_stored_with_one_group_per_root_are_read_and_kept():
    """Indexes written before groups were remembered side by side hold one group per root."""
    from ragcli.ingest.remembered import RootOptions, merged_root_options, read_root_options

    old = json.dumps({"/docs": {"group": "medium", "include": [], "exclude": ["_sources"]}})

    assert read_root_options(old) == {"/docs": {"medium": RootOptions("medium", (), ("_sources",))}}
    merged = read_root_options(merged_root_options(old, [Path("/docs")], RootOptions("fine", ("*.md",))))
    assert list(merged["/docs"].values()) == [
        RootOptions("medium", (), ("_sources",)),
        RootOptions("fine", ("*.md",), ()),
    ]


def test_a_text_file_whose_name_is_not_utf8_is_titled_with_escapes(tmp_path, isolated_home):
    """A text file is titled by its name; a name that is not valid UTF-8 is stored as its path
    is (`bad_\\xff`), not refused by the database."""
    import os

    root = tmp_path / "docs"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"bad_\xff.txt"), "wb") as handle:
        handle.write("Tea is picked in spring.".encode())
    run(isolated_home, root, HashEmbedder())
    store = Store.open(isolated_home)
    try:
        assert store.db.execute("SELECT title FROM documents").fetchall() == [("bad_\\xff",)]
    finally:
        store.close()
