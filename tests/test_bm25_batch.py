"""Batched BM25: `search_many` equals one search per query, the chunk cache never serves a
changed chunk, and `rag query -` reads stdin in batches that still stream."""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading

import pytest

from fakes import HashEmbedder
from ragcli.cli.stdin_batches import query_batches
from ragcli.ingest.pipeline import ingest_documents
from ragcli.retrieval.bm25 import BM25Retriever
from ragcli.retrieval.search import QueryOptions, Searcher
from ragcli.config import load_settings
from ragcli.store.local.database import Store
from ragcli.types import ChunkSettings, Document
from test_bm25 import ENGLISH, QUERIES, WHOLE, build


def documents(texts: dict[str, str]) -> list[Document]:
    return [
        Document(path=name, text=text, file_type="txt", metadata={"topic": name[0]})
        for name, text in texts.items()
    ]


@pytest.fixture
def english(isolated_home):
    store = build(isolated_home, ENGLISH)
    yield store
    store.close()


def test_search_many_equals_search_per_query(english):
    retriever = BM25Retriever(english, "medium")
    batched = retriever.search_many(QUERIES + ["", "the of and"], 5)
    single = [BM25Retriever(english, "medium").search(q, 5) for q in QUERIES + ["", "the of and"]]
    assert batched == single
    assert all(hits for hits in batched[: len(QUERIES)]) and batched[-2:] == [[], []]


def test_cached_chunks_follow_another_process_re_ingesting(isolated_home):
    ingest_documents(
        isolated_home, documents(ENGLISH), embedder=HashEmbedder(), group="medium", chunking=WHOLE
    )
    store = Store.open(isolated_home)
    retriever = BM25Retriever(store, "medium")
    before = retriever.search("reset the router", 1)[0].chunk
    assert before.path == "router" and "ten seconds" in before.text
    changed = dict(
        ENGLISH, router="To reset the router, press the recessed button with a pin for thirty seconds."
    )
    ingest_documents(
        isolated_home, documents(changed), embedder=HashEmbedder(), group="medium", chunking=WHOLE
    )
    after = retriever.search("reset the router", 1)[0].chunk
    assert after.path == "router" and "thirty seconds" in after.text and "ten seconds" not in after.text
    store.close()


def test_cached_chunks_follow_this_connections_own_writes(english):
    retriever = BM25Retriever(english, "medium")
    assert retriever.search("octopus hearts", 1)[0].chunk.metadata["lang"] == "en"
    with english.db:
        english.db.execute("""UPDATE documents SET metadata = '{"lang": "xx"}' WHERE path = 'octopus'""")
    assert retriever.search("octopus hearts", 1)[0].chunk.metadata["lang"] == "xx"


@pytest.mark.parametrize(
    "options",
    [
        QueryOptions(mode="bm25", top_k=3),
        QueryOptions(mode="bm25", top_k=4, filters={"topic": ("r", "c")}),
        QueryOptions(mode="bm25", top_k=5, min_score=3.0),
        QueryOptions(mode="bm25", top_k=2, rerank="keyword", require=("water",)),
        QueryOptions(mode="bm25", top_k=3, exclude=("sea",)),
    ],
)
def test_searcher_search_many_keeps_every_option(isolated_home, options):
    ingest_documents(
        isolated_home, documents(ENGLISH), embedder=HashEmbedder(), group="medium", chunking=WHOLE
    )
    with Searcher(isolated_home, settings=load_settings()) as searcher:
        batched = searcher.search_many(QUERIES, options)
    with Searcher(isolated_home, settings=load_settings()) as searcher:
        single = [searcher.search(query, options) for query in QUERIES]
    assert batched == single
    assert any(batched)


def test_batches_of_a_file_are_full_and_in_order():
    read, write = os.pipe()
    os.write(write, "one\n\n two \r\nthree\rfour\nfive".encode())
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as stream:
        assert list(query_batches(stream, limit=3)) == [["one", "two", "three"], ["four", "five"]]


def test_batches_do_not_wait_for_lines_not_yet_written():
    read, write = os.pipe()
    answered = threading.Event()

    def producer():
        os.write(write, b"first query\n")
        answered.wait(10)  # the second line comes only after the first was handed over
        os.write(write, b"second query\n")
        os.close(write)

    thread = threading.Thread(target=producer)
    thread.start()
    with os.fdopen(read, encoding="utf-8") as stream:
        batches = query_batches(stream)
        assert next(batches) == ["first query"]
        answered.set()
        assert list(batches) == [["second query"]]
    thread.join()


def test_a_stream_without_a_file_descriptor_gives_single_lines():
    assert list(query_batches(io.StringIO("a\n\nb\n"))) == [["a"], ["b"]]


def test_rag_query_stdin_equals_one_query_per_call(isolated_home):
    ingest_documents(
        isolated_home,
        documents(ENGLISH),
        embedder=HashEmbedder(),
        group="medium",
        chunking=ChunkSettings("word", 20, 0),
    )
    env = {**os.environ, "RAG_INDEX": str(isolated_home)}
    base = [
        "rag",
        "query",
        "--mode",
        "bm25",
        "-k",
        "3",
        "--min-score",
        "1",
        "--filter",
        "topic=r",
        "--filter",
        "topic=c",
    ]
    piped = subprocess.run(
        [*base, "--jsonl"],
        input="\n".join(QUERIES) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    one_by_one = []
    for query in QUERIES:
        done = subprocess.run([*base, query, "--jsonl"], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        one_by_one.extend(done.stdout.splitlines())
    assert piped.stdout.splitlines() == one_by_one
    records = [json.loads(line) for line in one_by_one]
    assert records and {record["path"][0] for record in records} <= {"r", "c"}
    assert all(record["score"] >= 1 for record in records)


def test_a_full_chunk_cache_restarts_and_still_returns_every_hit(english):
    from ragcli.store.local.chunkcache import ChunkCache

    small = BM25Retriever(english, "medium")
    small._lexical._chunks = ChunkCache(max_chunks=2)
    expected = BM25Retriever(english, "medium").search_many(QUERIES, 4)
    assert small.search_many(QUERIES, 4) == expected
    assert [small.search(query, 4) for query in QUERIES] == expected
    assert len(small._lexical._chunks._chunks) <= 4


def hit_rows(hits) -> list[tuple[str, str, float]]:
    return [(hit.chunk.path, hit.chunk.text, hit.score) for hit in hits]


def test_a_warm_repeated_query_reads_only_the_database_version(isolated_home):
    """Answered from memory: one `PRAGMA data_version`, no BEGIN or COMMIT; a commit by another
    connection is seen at once (new text, new scores)."""
    ingest_documents(
        isolated_home, documents(ENGLISH), embedder=HashEmbedder(), group="medium", chunking=WHOLE
    )
    options = QueryOptions(mode="bm25", top_k=3)
    with Searcher(isolated_home, settings=load_settings()) as searcher:
        first = searcher.search("reset the router", options)
        statements: list[str] = []
        searcher.store.db.set_trace_callback(statements.append)
        assert searcher.search("reset the router", options) == first
        assert statements == ["PRAGMA data_version"]
        changed = dict(ENGLISH, router="Reset the router: hold its reset button down for thirty seconds.")
        ingest_documents(
            isolated_home, documents(changed), embedder=HashEmbedder(), group="medium", chunking=WHOLE
        )
        after = searcher.search("reset the router", options)
        assert "BEGIN" in statements  # read again, in a snapshot
        assert "thirty seconds" in after[0].chunk.text
        assert after[0].score != first[0].score
        searcher.store.db.set_trace_callback(None)


def test_warm_queries_during_ingests_see_one_state_or_the_other(isolated_home, monkeypatch):
    """Re-ingests flip a document between two texts while a searcher repeats warm queries:
    each answer is exactly one state's (its texts with its scores), never a mix."""
    one = dict(ENGLISH, router="To reset the router, press the recessed button for ten seconds.")
    two = dict(ENGLISH, router="Reset the router router: hold the reset button, then restart the router.")
    options = QueryOptions(mode="bm25", top_k=4)
    expected = []
    for texts in (two, one):
        ingest_documents(
            isolated_home, documents(texts), embedder=HashEmbedder(), group="medium", chunking=WHOLE
        )
        with Searcher(isolated_home, settings=load_settings()) as fresh:
            expected.append({query: hit_rows(fresh.search(query, options)) for query in QUERIES})
    assert expected[0] != expected[1]
    done = threading.Event()

    def flip() -> None:
        try:
            for turn in range(12):
                ingest_documents(
                    isolated_home,
                    documents((two, one)[turn % 2]),
                    embedder=HashEmbedder(),
                    group="medium",
                    chunking=WHOLE,
                )
        finally:
            done.set()

    writer = threading.Thread(target=flip)
    seen = set()
    from_memory = []
    monkeypatch.setattr(Searcher, "_bm25_from_memory", spy(Searcher._bm25_from_memory, from_memory))
    with Searcher(isolated_home, settings=load_settings()) as searcher:
        writer.start()
        while not done.is_set():
            for query in QUERIES:
                found = hit_rows(searcher.search(query, options))
                assert found in (expected[0][query], expected[1][query]), query
                seen.add(found == expected[0][query])
    writer.join()
    assert seen == {True, False}
    assert any(hits is not None for hits in from_memory) and None in from_memory


def spy(method, results: list):
    """`method`, recording what each call returned."""

    def recorded(*args, **kwargs):
        results.append(method(*args, **kwargs))
        return results[-1]

    return recorded
