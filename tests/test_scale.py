"""Scale: BM25 deletions as marks (exact scores before and after compaction), the postings
cache, batched BM25, and the approximate (IVF) vector index past a threshold."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from runner import rag
from fakes import HashEmbedder
from ragcli.ingest.index_model import vector_params
from ragcli.ingest.pipeline import ingest_documents
from ragcli.analysis import index_terms
from ragcli.retrieval.bm25 import BM25Retriever
from ragcli.retrieval.dense import DenseRetriever
from ragcli.store.local.database import Store
from ragcli.store.local import ann
from ragcli.store.local.postings import merge_segments
from ragcli.store.local.vectors import FaissIndex, read_params
from ragcli.types import ChunkSettings, Document
from test_bm25 import ENGLISH, QUERIES

WHOLE = ChunkSettings("word", 2000, 0)
TEXTS = {
    f"{name}-{i}": f"{text} Copy {i} {'extra ' * i}." for i in range(4) for name, text in ENGLISH.items()
}


def ingest(index, texts: dict[str, str]) -> None:
    documents = [Document(path=name, text=text, file_type="txt") for name, text in texts.items()]
    ingest_documents(index, documents, embedder=HashEmbedder(), group="medium", chunking=WHOLE)


def assert_equals_rank_bm25(store: Store, retriever: BM25Retriever, queries=QUERIES) -> None:
    """Every hit's score is rank-bm25's over the live chunks, bit for bit; no deleted chunk."""
    rows = store.db.execute(
        "SELECT d.path, c.tokens FROM chunks c JOIN documents d ON d.id = c.doc_id ORDER BY c.id"
    ).fetchall()
    reference = BM25Okapi([tokens.split() for _, tokens in rows], k1=1.2, b=0.75)
    paths = [path for path, _ in rows]
    for query in queries:
        expected = dict(zip(paths, reference.get_scores(index_terms(query))))
        hits = retriever.search(query, len(paths))
        assert {h.chunk.path for h in hits} == {p for p, s in expected.items() if s > 0}, query
        for hit in hits:
            assert hit.score == expected[hit.chunk.path], (query, hit.chunk.path)


def delete(store: Store, prefix: str) -> None:
    with store.transaction():
        store.delete_documents(
            [
                doc_id
                for (doc_id,) in store.db.execute(
                    "SELECT id FROM documents WHERE path LIKE ?", [prefix + "%"]
                )
            ]
        )


def test_deletion_marks_chunks_without_rewriting_postings_and_scores_stay_exact(isolated_home):
    ingest(isolated_home, TEXTS)
    store = Store.open(isolated_home)
    try:
        retriever = BM25Retriever(store, "medium")
        assert_equals_rank_bm25(store, retriever)  # warms the reader's cache too
        postings_before = store.db.execute(
            "SELECT group_name, term, segment, chunk_ids FROM bm25_postings ORDER BY 1, 2, 3"
        ).fetchall()
        delete(store, "router-")
        delete(store, "octopus-1")
        assert store.db.execute("SELECT count(*) FROM bm25_deleted").fetchone()[0] == 5
        assert (
            store.db.execute(
                "SELECT group_name, term, segment, chunk_ids FROM bm25_postings ORDER BY 1, 2, 3"
            ).fetchall()
            == postings_before
        )
        # The same retriever (its cache from before) sees the deletions: exact N, avgdl and df.
        assert_equals_rank_bm25(store, retriever)
        assert not any(h.chunk.path.startswith("router-") for h in retriever.search("router reset", 50))
        # Compaction: merging drops the marked chunks from the postings themselves.
        segments = [row[0] for row in store.db.execute("SELECT id FROM bm25_segments")]
        with store.transaction():
            merge_segments(store.db, "medium", segments)
        assert store.db.execute("SELECT count(*) FROM bm25_deleted").fetchone()[0] == 0
        gone = {row[0] for row in store.db.execute("SELECT id FROM chunks")}
        for (blob,) in store.db.execute("SELECT chunk_ids FROM bm25_postings"):
            assert set(np.frombuffer(blob, dtype=np.int64)) <= gone
        assert_equals_rank_bm25(store, retriever)
        assert_equals_rank_bm25(store, BM25Retriever(store, "medium"))
    finally:
        store.close()


def test_a_mostly_deleted_segment_is_compacted_and_an_emptied_one_dropped(isolated_home, monkeypatch):
    import ragcli.ingest.batching as ingest_module

    monkeypatch.setattr(ingest_module, "FIRST_BATCH", 1000)  # one batch, so one BM25 segment
    ingest(isolated_home, TEXTS)
    store = Store.open(isolated_home)
    try:
        delete(store, "")  # everything but nothing left to score
        assert store.db.execute("SELECT count(*) FROM bm25_segments").fetchone()[0] == 0
        assert store.db.execute("SELECT count(*) FROM bm25_postings").fetchone()[0] == 0
        assert store.db.execute("SELECT count(*) FROM bm25_deleted").fetchone()[0] == 0
        assert BM25Retriever(store, "medium").search("router", 5) == []
    finally:
        store.close()
    ingest(isolated_home, TEXTS)
    store = Store.open(isolated_home)
    try:
        for name in list(ENGLISH)[:4]:  # 16 of 56 chunks: marked
            delete(store, name + "-")
        assert store.db.execute("SELECT count(*) FROM bm25_deleted").fetchone()[0] == 16
        assert_equals_rank_bm25(store, BM25Retriever(store, "medium"))
        delete(store, list(ENGLISH)[4] + "-")  # 20 of 56: more than a third, the segment is rewritten
        assert store.db.execute("SELECT count(*) FROM bm25_deleted").fetchone()[0] == 0
        assert_equals_rank_bm25(store, BM25Retriever(store, "medium"))
    finally:
        store.close()


def test_re_ingest_with_changes_through_one_cached_retriever(isolated_home):
    ingest(isolated_home, TEXTS)
    store = Store.open(isolated_home)
    try:
        retriever = BM25Retriever(store, "medium")
        assert_equals_rank_bm25(store, retriever)
        changed = {**TEXTS, "router-0": "Unplug the modem and plug it back in after thirty seconds."}
        del changed["wifi-2"]
        ingest(isolated_home, changed)  # another connection writes
        assert retriever.search("modem unplug", 1)[0].chunk.path == "router-0"
        assert_equals_rank_bm25(store, retriever, QUERIES + ["router modem", "wireless microwaves"])
    finally:
        store.close()


def test_search_many_equals_one_by_one(isolated_home):
    ingest(isolated_home, TEXTS)
    store = Store.open(isolated_home)
    try:
        retriever = BM25Retriever(store, "medium")
        queries = QUERIES + ["the and of", "router router reset"]
        batched = retriever.search_many(queries, 7)
        assert len(batched) == len(queries)
        for query, hits in zip(queries, batched):
            assert [(h.chunk.id, h.score, h.rank) for h in hits] == [
                (h.chunk.id, h.score, h.rank) for h in BM25Retriever(store, "medium").search(query, 7)
            ]
    finally:
        store.close()


def clustered(count: int, dimension: int = 64, seed: int = 3) -> np.ndarray:
    """Unit vectors around 40 centres: structure like real embeddings (not uniform noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dimension))
    vectors = centres[rng.integers(40, size=count)] + 0.6 * rng.standard_normal((count, dimension))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_ivf_recall_against_exact_search_on_a_synthetic_set():
    vectors, queries = clustered(4000), clustered(200, seed=9)
    ids = np.arange(100, 4100, dtype=np.int64)
    exact = FaissIndex(64)
    exact.add(ids, vectors)
    approximate = ann.IVFIndex.trained(vectors, len(vectors))
    approximate.add(ids, vectors)
    assert approximate.nlist == min(ann.planned_lists(4000), 4000 // ann.TRAIN_PER_LIST) == 100
    assert len(approximate) == 4000
    assert np.array_equal(np.sort(approximate.ids()), ids)
    _, want = exact.search(queries, 10)
    _, got = approximate.search(queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(want, got)])
    assert recall >= 0.95
    # With an allow-list every list is scanned: exact over the allowed vectors.
    allowed = ids[::7]
    _, want = exact.search(queries[:20], 10, allowed)
    _, got = approximate.search(queries[:20], 10, allowed)
    assert np.array_equal(want, got)
    approximate.remove(ids[:1000])
    assert len(approximate) == 3000 and set(approximate.ids()) == set(ids[1000:].tolist())


def test_past_the_threshold_the_index_becomes_approximate_and_status_says_so(isolated_home, monkeypatch):
    monkeypatch.setattr(ann, "APPROXIMATE_ABOVE", 30)
    texts = {
        f"{name}-{i}": f"{text} Variant {i} {name}{i}." for i in range(3) for name, text in ENGLISH.items()
    }
    ingest(isolated_home, texts)  # 42 chunks > 30
    params = read_params(isolated_home / "vectors" / "medium.faiss")
    assert params["index_type"] == ann.INDEX_TYPE and params["count"] == 42
    assert params["nlist"] >= 1 and params["nprobe"] == ann.nprobe_for(params["nlist"])
    status = rag("status", "--json", "--index", str(isolated_home))
    assert status.returncode == 0, status.stderr
    search = json.loads(status.stdout)["groups"]["medium"]["vector_search"]
    assert search == {"type": ann.INDEX_TYPE, "nlist": params["nlist"], "nprobe": params["nprobe"]}
    text = rag("status", "--index", str(isolated_home))
    assert text.returncode == 0 and ann.INDEX_TYPE in text.stdout
    store = Store.open(isolated_home)
    try:  # dense search through the approximate index, filters included
        index = store.vector_index("medium")
        assert isinstance(index, ann.IVFIndex)
        hits = DenseRetriever(store, "medium", HashEmbedder).search(texts["octopus-1"], 3)
        assert hits[0].chunk.path == "octopus-1"
    finally:
        store.close()
    store = Store.open(isolated_home)
    try:
        with store.transaction():
            rows = store.db.execute("SELECT path, id FROM documents").fetchall()
            store.delete_documents(
                [doc_id for path, doc_id in rows if not path.startswith(("tea", "coffee"))]
            )
        store.sync_vectors("medium", vector_params(store, "medium"))
    finally:
        store.close()
    params = read_params(isolated_home / "vectors" / "medium.faiss")
    assert params["index_type"] == "flat" and params["count"] == 6  # well below: exact again
    status = json.loads(rag("status", "--json", "--index", str(isolated_home)).stdout)
    assert status["groups"]["medium"]["vector_search"] == {"type": "exact"}


def test_below_the_threshold_search_stays_exact(isolated_home):
    ingest(isolated_home, TEXTS)
    params = read_params(isolated_home / "vectors" / "medium.faiss")
    assert params["index_type"] == "flat"
    assert not isinstance(Store.open(isolated_home).vector_index("medium"), ann.IVFIndex)


@pytest.mark.parametrize("threshold", [10])
def test_a_growing_group_is_retrained_when_its_lists_outgrow_the_plan(isolated_home, monkeypatch, threshold):
    monkeypatch.setattr(ann, "APPROXIMATE_ABOVE", threshold)
    small = FaissIndex(8).describe()
    assert not ann.needs_new_index(small, threshold, threshold)
    assert ann.needs_new_index(small, threshold + 1, threshold)
    assert not ann.needs_new_index({}, threshold, threshold)  # params written before IVF: flat
    trained = ann.IVFIndex.trained(clustered(2000, 8), 2000).describe()
    assert not ann.needs_new_index(trained, 2000, threshold)
    assert ann.needs_new_index(trained, 20_000, threshold)  # lists 10x longer than planned
    assert ann.needs_new_index(trained, 4, threshold) and not ann.needs_new_index(trained, 6, threshold)


def test_a_new_ivf_index_is_filled_batch_by_batch_and_equals_a_one_shot_build(isolated_home, monkeypatch):
    """Past the threshold the first sync trains IVF on a sample and adds the vectors in the
    store's read batches (no whole-group matrix); the result equals adding them at once."""
    import faiss

    monkeypatch.setattr(ann, "APPROXIMATE_ABOVE", 100)
    rng = np.random.default_rng(2)
    names = sorted({name for name in ENGLISH})
    texts = {
        f"doc-{i}": " ".join(rng.choice(names, size=6)) + f" {ENGLISH[names[i % len(names)]]} n{i}"
        for i in range(1200)
    }
    ingest(isolated_home, texts)
    store = Store.open(isolated_home)
    try:
        built = store.vector_index("medium", writable=True)  # in memory: clonable
        assert isinstance(built, ann.IVFIndex) and built.nlist > 1
        batches = list(store.vectors_for(store.group_embedding_ids("medium"), built.dimension))
        assert len(batches) > 1  # the build saw several batches
        ids = np.concatenate([batch_ids for batch_ids, _ in batches])
        vectors = np.concatenate([batch for _, batch in batches])
        one_shot = ann.IVFIndex(built.dimension, faiss.clone_index(built._index))
        one_shot._index.reset()  # the same trained cells, no vectors
        one_shot.add(ids, vectors)
        assert len(built) == len(one_shot) == len(ids)
        for number in range(built.nlist):
            assert built._index.invlists.list_size(number) == one_shot._index.invlists.list_size(number)
        want_scores, want_ids = one_shot.search(vectors[::50], 10)
        got_scores, got_ids = built.search(vectors[::50], 10)
        assert np.array_equal(want_ids, got_ids) and np.array_equal(want_scores, got_scores)
    finally:
        store.close()


def test_the_checksum_read_window_by_window_is_the_whole_file_crc(tmp_path, monkeypatch):
    import zlib

    from ragcli.store.local import vectors

    monkeypatch.setattr(vectors, "_CRC_WINDOW", 1 << 16)
    for size in (0, 1, 1 << 16, (1 << 16) + 1, 300_000):
        payload = np.random.default_rng(size).bytes(size)
        (tmp_path / "file").write_bytes(payload)
        assert vectors.file_checksum(tmp_path / "file") == (size, zlib.crc32(payload))


def test_selecting_on_the_id_range_ranks_exactly_like_the_posting_path():
    """Both ways of picking the k best give the same ids, scores and tie order."""
    from ragcli.store.local.postings_reader import _best, _best_in_range

    rng = np.random.default_rng(4)
    for trial in range(40):
        ids = np.concatenate(
            [
                np.sort(rng.choice(np.arange(50, 120), size=rng.integers(1, 60), replace=False))
                for _ in range(rng.integers(1, 5))
            ]
        ).astype(np.int64)
        partial = rng.choice([0.5, 1.25, 2.0], size=len(ids)) if trial % 2 else rng.random(len(ids))
        low = int(ids.min())
        totals = np.bincount(ids - low, weights=partial)
        for k in (1, 3, 10, 1000):
            assert _best_in_range(totals, low, k) == _best(
                ids, partial, k, None, repeats=None, bounds=(low, 10**9)
            )


def test_the_first_commit_is_a_small_batch_and_later_ones_grow(isolated_home, monkeypatch):
    """A kill early in a run keeps its progress: the first batch holds FIRST_BATCH chunks, not
    the default 256, and text-only batches double from there."""
    from ragcli.ingest import batching

    committed: list[int] = []
    real_flush = batching._Batcher.flush

    def recording_flush(self):
        if self.pending:
            committed.append(self.count)
        real_flush(self)

    monkeypatch.setattr(batching._Batcher, "flush", recording_flush)
    monkeypatch.setattr(batching, "COMMIT_SECONDS", 3600.0)  # sizes alone decide, not the clock
    ingest(isolated_home, {f"note-{i}": f"lighthouse keeper journal entry {i}." for i in range(100)})
    assert committed[0] == batching.FIRST_BATCH
    assert committed[:3] == [16, 32, 52] and sum(committed) == 100
