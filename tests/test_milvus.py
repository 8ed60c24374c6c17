"""The Milvus backend on a real Milvus Lite file (the `[milvus]` extra; skipped without it).

Each test gets its own Milvus Lite file: in-process, a file's server starts in about 0.5 s
and creating the two collections takes about 1 s here, so no state is shared between tests.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from fakes import HashEmbedder  # noqa: E402
from runner import rag  # noqa: E402
from ragcli.config import load_settings  # noqa: E402
from ragcli.errors import StoreUnavailable, UsageError  # noqa: E402
from ragcli.ingest.pipeline import ingest, ingest_documents, remove_paths  # noqa: E402
from ragcli.retrieval.documents import get_chunk, get_document  # noqa: E402
from ragcli.retrieval.search import QueryOptions, Searcher  # noqa: E402
from ragcli.store.status import index_status, list_documents  # noqa: E402
from ragcli.types import ChunkSettings, Document  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORDS = ChunkSettings("word", 20, 5)
TEXTS = {
    "router.txt": "To reset the router, hold the reset button for ten seconds until the lights blink.",
    "octopus.md": "# Octopus\n\nAn octopus has three hearts and blue blood; it tastes with its arms.",
    "tea.txt": "Green tea is steamed or pan-fired. 绿茶是中国产量最多的茶类，龙井是其中最有名的一种。",
}


@pytest.fixture
def store(tmp_path):
    """A Milvus Lite file of this test's own; its in-process server stops afterwards."""
    path = tmp_path / "milvus.db"
    yield str(path)
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(path))


def corpus(folder: Path, texts=TEXTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run(index: Path, root: Path, store: str | None, embedder=None, **kwargs):
    return ingest(index, [root], embedder=embedder or HashEmbedder(), chunking=WORDS, store=store, **kwargs)


def search(index: Path, query: str, **options):
    with Searcher(index, settings=load_settings(), embedder=HashEmbedder()) as searcher:
        return searcher.search(query, QueryOptions(**options))


def names(hits) -> list[str]:
    return [Path(hit.chunk.path).name for hit in hits]


def test_ingest_and_query_every_mode(tmp_path, store):
    index = tmp_path / "index"
    report = run(index, corpus(tmp_path / "docs"), store)
    assert (report.added, report.chunks, report.vectors) == (3, report.vectors, report.chunks)
    assert not (index / "vectors").exists()  # the content is in Milvus, not the index folder
    for mode in ("bm25", "dense", "hybrid"):
        hits = search(index, "reset the router button", mode=mode, top_k=2)
        assert names(hits)[0] == "router.txt", mode
        assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
    assert names(search(index, "龙井", mode="bm25", top_k=1)) == ["tea.txt"]  # CJK bigrams, as locally
    assert search(index, "the of and", mode="bm25") == []  # stop words only: no terms


def test_filters_restrict_every_mode(tmp_path, store):
    index = tmp_path / "index"
    run(index, corpus(tmp_path / "docs"), store)
    for mode in ("bm25", "dense", "hybrid"):
        hits = search(index, "reset router octopus hearts", mode=mode, filters={"file_type": ("md",)})
        assert names(hits) == ["octopus.md"], mode
        assert search(index, "router", mode=mode, filters={"file_type": ("pdf",)}) == []
    glob = search(index, "router octopus tea", mode="bm25", filters={"path": ("*/tea.txt",)})
    assert names(glob) == ["tea.txt"]


def test_incremental_reingest_prune_and_rm(tmp_path, store):
    index, root = tmp_path / "index", corpus(tmp_path / "docs")
    run(index, root, store)
    embedder = HashEmbedder()
    again = run(index, root, None, embedder)  # the recorded store is used: no flag needed
    assert (again.unchanged, again.added, again.embedded, embedder.calls) == (3, 0, 0, 0)
    (root / "router.txt").write_text("To restart the modem, unplug it for thirty seconds.", encoding="utf-8")
    (root / "tea.txt").unlink()
    changed = run(index, root, None, embedder)
    assert (changed.updated, changed.removed, changed.unchanged) == (1, 1, 1)
    assert names(search(index, "restart modem", mode="bm25")) == ["router.txt"]
    assert search(index, "reset button lights", mode="bm25") == []  # the old chunks are gone
    assert sorted(Path(d["path"]).name for d in list_documents(index)) == ["octopus.md", "router.txt"]
    assert remove_paths(index, [str(root / "octopus.md")]) == 1
    assert [Path(d["path"]).name for d in list_documents(index)] == ["router.txt"]
    assert index_status(index)["chunks"] == 1


def test_a_shrinking_document_leaves_no_old_chunks(tmp_path, store):
    index = tmp_path / "index"
    long = " ".join(f"word{i}" for i in range(200))
    root = corpus(tmp_path / "docs", {"long.txt": long})
    first = run(index, root, store)
    (root / "long.txt").write_text("short text now", encoding="utf-8")
    run(index, root, None)
    assert first.chunks > 1 and index_status(index)["chunks"] == 1


def test_two_machines_share_one_store_without_duplicates(tmp_path, store):
    shared = corpus(tmp_path / "shared", {"common.txt": "Lighthouses guide ships with a rotating lamp."})
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    run(alice, corpus(tmp_path / "a", {"a.txt": "Alpine glaciers retreat every summer."}), store)
    run(bob, corpus(tmp_path / "b", {"b.txt": "Desert dunes move with the wind."}), store)
    run(alice, shared, None)
    run(bob, shared, None)
    for index in (alice, bob):
        status = index_status(index)
        assert (status["documents"], status["chunks"]) == (3, 3)
        assert status["store"] == {"backend": "milvus", "uri": store}
        assert names(search(index, "glaciers", mode="bm25")) == ["a.txt"]
        assert names(search(index, "dunes wind", mode="dense", top_k=1)) == ["b.txt"]
        assert names(search(index, "lighthouse lamp", mode="bm25")) == ["common.txt"]


def test_get_document_and_chunk(tmp_path, store):
    index, root = tmp_path / "index", corpus(tmp_path / "docs")
    run(index, root, store)
    document = get_document(index, str(root / "octopus.md"))
    assert "three hearts" in document.text and document.metadata["file_type"] == "md"
    chunk = get_chunk(index, document.chunk_ids[0])
    assert chunk.path == str(root / "octopus.md") and chunk.text in document.text


def test_store_is_chosen_once(tmp_path, store):
    index, root = tmp_path / "index", corpus(tmp_path / "docs")
    run(index, root, store)
    with pytest.raises(UsageError, match="already uses"):
        run(index, root, str(tmp_path / "other.db"))
    local = tmp_path / "local"
    run(local, root, None)
    with pytest.raises(UsageError, match="already uses local"):
        run(local, root, store)


def test_an_unreachable_server_is_one_error_and_records_nothing(tmp_path):
    index = tmp_path / "index"
    with pytest.raises(StoreUnavailable, match="http://127.0.0.1:9"):
        run(index, corpus(tmp_path / "docs"), "http://127.0.0.1:9")
    run(index, corpus(tmp_path / "docs"), None)  # nothing recorded: the index can still be local
    assert index_status(index)["store"]["backend"] == "local"


def test_a_different_model_is_refused(tmp_path, store):
    from ragcli.errors import IndexMismatch

    run(tmp_path / "one", corpus(tmp_path / "docs"), store)
    with pytest.raises(IndexMismatch, match="fake-hash-64"):
        run(tmp_path / "two", corpus(tmp_path / "docs"), store, HashEmbedder(dimension=32))


def test_doctor_checks_connection_and_schema(tmp_path, store, monkeypatch):
    from ragcli.doctor import _index_checks

    index = tmp_path / "index"
    run(index, corpus(tmp_path / "docs"), store)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: HashEmbedder())
    checks = {check.name: check for check in _index_checks(load_settings(index=index))}
    assert checks["milvus connection"].ok and checks["milvus collections"].ok, checks
    assert checks["model fingerprint"].ok and checks["sqlite integrity"].ok


def test_eval_documents_go_to_milvus(tmp_path, store):
    index = tmp_path / "index"
    docs = [Document(path=f"doc{i}", text=text, file_type="txt") for i, text in enumerate(TEXTS.values())]
    report = ingest_documents(index, docs, embedder=HashEmbedder(), chunking=WORDS, store=store)
    assert report.added == 3 and index_status(index)["store"]["backend"] == "milvus"
    assert names(search(index, "octopus hearts", mode="hybrid", top_k=1)) == ["doc1"]


def rag_cli(index: Path, *args: str) -> subprocess.CompletedProcess:
    """The real `python -m ragcli` on `index`, this checkout first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return rag(*args, "--index", str(index), env=env, timeout=300)


def test_cli_ingest_query_status_through_the_entry_point(tmp_path):
    """Its own Milvus Lite file: a file serves one process at a time."""
    store, index = str(tmp_path / "cli.db"), tmp_path / "index"
    root = corpus(tmp_path / "docs")
    ingested = rag_cli(index, "ingest", str(root), "--store", store, "--json")
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["added"] == 3
    query = rag_cli(index, "query", "reset the router", "--mode", "bm25", "--top-k", "1", "--json")
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout)["hits"][0]["path"].endswith("router.txt")
    status = json.loads(rag_cli(index, "status", "--json").stdout)
    assert status["store"] == {"backend": "milvus", "uri": store} and status["documents"] == 3
    other = rag_cli(index, "ingest", str(root), "--store", str(tmp_path / "other.db"))
    assert other.returncode == 2 and other.stderr.count("\n") == 1 and "already uses" in other.stderr


def test_a_milvus_lite_file_open_in_another_process_is_one_line(tmp_path, store):
    index = tmp_path / "index"
    run(index, corpus(tmp_path / "docs"), store)  # this process now serves the file
    status = rag_cli(index, "status")
    assert status.returncode == 1 and status.stderr.count("\n") == 1, status.stderr
    assert "open in another rag process" in status.stderr


def test_ask_answers_from_milvus_and_its_cache_follows_a_change(tmp_path, store):
    from dataclasses import replace

    from fakes import EchoGenerator
    from ragcli.answer.ask import Asker
    from ragcli.answer.options import AskOptions

    index, root = tmp_path / "index", corpus(tmp_path / "docs")
    run(index, root, store)
    options = AskOptions(query=QueryOptions(mode="bm25", top_k=3), answer_style="generative")
    with Asker(index, settings=load_settings(), generator=EchoGenerator(), embedder=HashEmbedder()) as asker:
        answer = asker.ask("How many hearts does an octopus have?", options)
        assert answer.sources and Path(answer.sources[0].path).name == "octopus.md"
        assert asker.ask("How many hearts does an octopus have?", options).cached
        (root / "octopus.md").write_text("An octopus has three hearts and nine brains.", encoding="utf-8")
        run(index, root, None)
        assert not asker.ask("How many hearts does an octopus have?", replace(options)).cached


def test_watched_changes_apply_to_milvus(tmp_path, store):
    from ragcli.ingest.changes import ingest_changes

    index, root = tmp_path / "index", corpus(tmp_path / "docs")
    run(index, root, store)
    (root / "tea.txt").unlink()
    (root / "new.txt").write_text("Volcanoes erupt molten rock.", encoding="utf-8")
    report = ingest_changes(
        index, [root], [root / "tea.txt", root / "new.txt"], embedder=HashEmbedder(), chunking=WORDS
    )
    assert (report.added, report.removed) == (1, 1)
    assert names(search(index, "volcanoes", mode="bm25")) == ["new.txt"]


def test_eval_retrieval_builds_its_index_on_the_store(tmp_path, store, monkeypatch, fixtures_dir):
    from ragcli.index import open_index

    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: HashEmbedder())
    with open_index(tmp_path / "unused", cache_dir=str(tmp_path / "cache")) as opened:
        report = opened.evaluate_retrieval(fixtures_dir / "beir-mini", store=store)
    assert report.configurations[0].metrics["ndcg@10"] > 0
    assert index_status(Path(report.index))["store"] == {"backend": "milvus", "uri": store}


def test_new_chunk_settings_rechunk_every_document(tmp_path, store):
    index, root = tmp_path / "index", corpus(tmp_path / "docs")
    first = run(index, root, store)
    again = ingest(index, [root], embedder=HashEmbedder(), chunking=ChunkSettings("word", 8, 2))
    assert (again.updated, again.unchanged) == (3, 0) and again.chunks > first.chunks
    assert index_status(index)["chunks"] == again.chunks


def test_a_file_whose_reader_has_a_version_is_stored_and_then_unchanged(tmp_path, store):
    """Its content hash names the reader's version (past Milvus's 64 characters)."""
    index, root = tmp_path / "index", corpus(tmp_path / "docs")
    (root / "harvests.csv").write_text("month,tonnes\nApril,12\nMay,30\n", encoding="utf-8")
    assert run(index, root, store).added == 4
    again = run(index, root, None)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 4)


def test_defer_embedding_on_milvus_embeds_and_asks_for_no_embed_run(tmp_path):
    store, index = str(tmp_path / "defer.db"), tmp_path / "index"
    ingested = rag_cli(index, "ingest", str(corpus(tmp_path / "docs")), "--store", store, "--defer-embedding")
    assert ingested.returncode == 0, ingested.stderr
    assert "3 added" in ingested.stderr and "rag embed" not in ingested.stderr


def test_a_missing_milvus_lite_file_is_one_line_and_not_recreated(tmp_path):
    store, index = tmp_path / "gone.db", tmp_path / "index"
    root = corpus(tmp_path / "docs")
    assert rag_cli(index, "ingest", str(root), "--store", str(store)).returncode == 0
    store.rename(tmp_path / "moved.db")
    for command in (["status"], ["query", "octopus"], ["ingest", str(root)]):
        result = rag_cli(index, *command)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, (command, result.stderr)
        assert f"{store} this index uses is missing" in result.stderr
    assert not store.exists()


def served_store(tmp_path, store, model_cache_dir):
    """`rag serve` over ten documents in a Milvus store (63-bit ids: most have 19 digits),
    embedded by the default model, as the server's answers need it."""
    from serving import clean_env, running_server
    from milvus_lite.server_manager import server_manager_instance
    from ragcli.embedding import load_embedder
    from ragcli.store.milvus.connection import lite_locked

    index = tmp_path / "index"
    env = clean_env(tmp_path / "home", model_cache_dir, RAG_MODE="bm25")
    texts = {f"note{n}.txt": f"Note {n}: the router's reset button, pressed {n} times." for n in range(10)}
    embedder = load_embedder(None, cache_dir=Path(env["RAG_CACHE_DIR"]))
    run(index, corpus(tmp_path / "docs", texts), store, embedder)
    # Milvus Lite serves one process at a time: this one's server is stopped, and the server
    # process starts once the file's lock is free (a stopped server lets go of it a little later).
    gc.collect()
    server_manager_instance.release_server(store)
    deadline = time.monotonic() + 300
    while lite_locked(Path(store)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return running_server(env, "--index", str(index))


def test_every_chunk_a_search_returns_is_fetched_by_its_id_over_http(tmp_path, store, model_cache_dir):
    import httpx2 as httpx

    with served_store(tmp_path, store, model_cache_dir) as url, httpx.Client(timeout=300) as client:
        found = client.post(f"{url}/query", json={"query": "router reset button", "top_k": 10})
        assert found.status_code == 200, found.text
        hits = found.json()["hits"]
        assert len(hits) == 10 and any(hit["chunk_id"] >= 10**18 for hit in hits)  # 19 digits
        for hit in hits:
            got = client.get(f"{url}/chunks/{hit['chunk_id']}")
            assert (got.status_code, got.json()["text"]) == (200, hit["text"])
        too_big = client.get(f"{url}/chunks/{2**63}")
        assert too_big.status_code == 400 and "give a whole number" in too_big.json()["error"]


def test_the_page_shows_the_chunk_a_citation_names(tmp_path, store, model_cache_dir):
    """In a real browser: a citation's chunk id past 2**53 is asked for exactly, not rounded."""
    playwright = pytest.importorskip("playwright.sync_api")
    from test_serve_browser import CHROMIUM  # skips without chromium

    with served_store(tmp_path, store, model_cache_dir) as url:
        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(url)
            page.fill("#question", "How many times was the reset button of note 7 pressed?")
            page.click("#ask-button")
            state = page.locator("#ask-state")
            playwright.expect(state).to_contain_text(re.compile("answered|error"), timeout=300_000)
            assert "answered" in state.inner_text()
            page.locator("#citations li a").first.click()
            viewer = page.locator("#viewer-text")
            playwright.expect(viewer).to_contain_text("the router's reset button", timeout=120_000)
            browser.close()


def test_threads_opening_one_milvus_lite_file_at_once_all_get_it(tmp_path):
    """The first client of a Milvus Lite file starts its server in this process; two threads
    opening it at once (a server's first requests) both started one, and the second found the
    file locked ("open in another rag process")."""
    import threading

    from milvus_lite.server_manager import server_manager_instance
    from ragcli.store.milvus.connection import connect

    for attempt in range(3):
        uri = str(tmp_path / f"store{attempt}.db")
        start, errors = threading.Barrier(6), []

        def open_store() -> None:
            start.wait()
            try:
                connect(uri)
            except StoreUnavailable as error:
                errors.append(str(error))

        threads = [threading.Thread(target=open_store) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        server_manager_instance.release_server(uri)
        assert errors == []
