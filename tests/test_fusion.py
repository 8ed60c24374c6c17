"""The adaptive fusion on constructed cases: one list empty, one flat, disjoint and identical lists."""

from __future__ import annotations

import pytest

from ragcli.choices import FUSIONS
from ragcli.retrieval.fusion import (
    FEEDBACK_DENSE_DEPTH,
    GAP_BOOST,
    PRIORS,
    adaptive_fusion,
    adaptive_weights,
    exact_option_weights,
    feedback_chunk,
    floor_normalise,
    fuse_hits,
    short_options,
    spread,
    top_gap,
)
from ragcli.types import Chunk, Hit

BM25 = [("a", 12.0), ("b", 9.0), ("c", 4.0), ("d", 1.0)]
DENSE = [("c", 0.82), ("e", 0.61), ("a", 0.55), ("f", 0.30)]


def ids(fused):
    return [item for item, _ in fused]


def test_spread_is_zero_for_flat_or_empty_lists_and_one_for_short_ones():
    assert spread([]) == 0.0
    assert spread([0.7] * 30) == 0.0
    assert spread([5.0, 4.0]) == 1.0  # fewer than `depth` hits: the missing ranks score the floor
    assert spread([1.0] + [0.5] * 29) == pytest.approx(0.5)
    assert spread([-0.2, -0.3]) == 0.0  # nothing above the floor


def test_floor_normalise_keeps_a_flat_list_flat():
    assert floor_normalise([4.0, 2.0, 1.0]) == [1.0, 0.5, 0.25]
    assert floor_normalise([0.5, 0.5, 0.5]) == [1.0, 1.0, 1.0]  # min-max would divide by zero
    assert floor_normalise([]) == []


def test_one_retriever_empty_gives_the_other_retrievers_order():
    fused, weights = adaptive_fusion({"bm25": [], "dense": DENSE})
    assert ids(fused) == ids(DENSE)
    assert weights == {"bm25": 0.0, "dense": 1.0}
    fused, weights = adaptive_fusion({"bm25": BM25, "dense": []})
    assert ids(fused) == ids(BM25) and weights["bm25"] == 1.0


def test_a_flat_list_has_no_say():
    flat = [(item, 0.4) for item in "zyxwvutsrqponmlkjihg"]  # 20 hits, all equal
    fused, weights = adaptive_fusion({"bm25": BM25, "dense": flat})
    assert weights["dense"] == 0.0
    assert ids(fused)[:4] == ids(BM25)  # BM25's order, the flat list's ids after
    fused, weights = adaptive_fusion({"bm25": [(item, 3.0) for item, _ in flat], "dense": DENSE})
    assert weights["bm25"] == 0.0 and ids(fused)[:4] == ids(DENSE)


def test_disjoint_lists_interleave_by_weighted_normalised_score():
    bm25 = [("a", 10.0), ("b", 5.0)]
    dense = [("x", 0.9), ("y", 0.45)]
    fused, weights = adaptive_fusion({"bm25": bm25, "dense": dense})
    # Both short (full spread) with the same top gap: the priors decide.
    assert weights == {"bm25": pytest.approx(0.2), "dense": pytest.approx(0.8)}
    scores = dict(fused)
    assert scores["x"] == pytest.approx(0.8)
    assert scores["y"] == pytest.approx(0.4)
    assert scores["a"] == pytest.approx(0.2) and scores["b"] == pytest.approx(0.1)
    assert ids(fused) == ["x", "y", "a", "b"]


def test_identical_lists_keep_their_order():
    same = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    fused, _ = adaptive_fusion({"bm25": same, "dense": [(i, s / 4) for i, s in same]})
    assert ids(fused) == ["a", "b", "c"]
    assert dict(fused)["a"] == pytest.approx(1.0)


def test_agreement_is_rewarded():
    # "c" is third for BM25 and first for dense; "b" is BM25's second and absent from dense.
    fused, _ = adaptive_fusion({"bm25": BM25, "dense": DENSE})
    assert ids(fused)[0] in {"a", "c"} and ids(fused).index("c") < ids(fused).index("b")


def test_top_gap_is_the_share_of_the_top_score_above_the_second():
    assert top_gap([]) == 0.0 and top_gap([3.0]) == 1.0  # a single hit: the second scores the floor
    assert top_gap([10.0, 4.0, 1.0]) == pytest.approx(0.6)
    assert top_gap([0.5, 0.5]) == 0.0
    assert top_gap([-0.1, -0.2]) == 0.0  # nothing above the floor


def test_a_clear_top_hit_raises_its_lists_weight():
    # Same spread to rank 20; only BM25's best hit stands clear of its second.
    clear = [10.0, 5.0] + [4.5] * 17 + [2.0]
    crowded = [10.0, 9.9] + [4.5] * 17 + [2.0]
    dense = [0.8, 0.7] + [0.5] * 17 + [0.16]
    sure = adaptive_weights({"bm25": clear, "dense": dense})["bm25"]
    unsure = adaptive_weights({"bm25": crowded, "dense": dense})["bm25"]
    assert sure > unsure
    off = adaptive_weights({"bm25": clear, "dense": dense}, gap_boost=0.0)["bm25"]
    assert off == pytest.approx(adaptive_weights({"bm25": crowded, "dense": dense}, gap_boost=0.0)["bm25"])


def test_weights_follow_the_spread_and_gap_and_sum_to_one():
    peaked = [1.0] + [0.1] * 29
    shallow = [1.0] + [0.9] * 29
    weights = adaptive_weights({"bm25": peaked, "dense": shallow})
    assert sum(weights.values()) == pytest.approx(1.0)
    raw_b = PRIORS["bm25"] * 0.9 * (1 + GAP_BOOST * 0.9)
    raw_d = PRIORS["dense"] * 0.1 * (1 + GAP_BOOST * 0.1)
    assert weights["bm25"] == pytest.approx(raw_b / (raw_b + raw_d))
    nothing = adaptive_weights({"bm25": [], "dense": []})  # no spread anywhere: the priors decide
    assert nothing == {"bm25": pytest.approx(0.2), "dense": pytest.approx(0.8)}


def test_fuse_hits_records_the_weights_and_user_weights_scale_the_priors():
    chunk = lambda i: Chunk(i, i, "g", 0, f"t{i}", 0, 1, None, f"p{i}")  # noqa: E731
    bm25 = [Hit(chunk(1), 6.0), Hit(chunk(2), 2.0)]
    results = {"bm25": bm25, "dense": [Hit(chunk(3), 0.75), Hit(chunk(4), 0.25)]}  # equal top gaps
    fused = fuse_hits(results)
    assert {h.chunk.id: {n: p["weight"] for n, p in h.sources.items()} for h in fused} == {
        1: {"bm25": 0.2},
        2: {"bm25": 0.2},
        3: {"dense": 0.8},
        4: {"dense": 0.8},
    }
    only_bm25 = fuse_hits(results, weights={"bm25": 1.0, "dense": 0.0})
    assert [h.chunk.id for h in only_bm25][:2] == [1, 2] and only_bm25[0].sources["bm25"]["weight"] == 1.0
    assert "adaptive" in FUSIONS and [h.chunk.id for h in fuse_hits(results, fusion="rrf")][0] in {1, 3}


def test_feedback_vector_moves_the_query_toward_the_feedback_and_stays_unit_length():
    import numpy as np

    from ragcli.retrieval.dense import feedback_vector

    query = np.array([[1.0, 0.0, 0.0]], dtype=np.float32)
    feedback = np.array([[0.0, 1.0, 0.0]], dtype=np.float32)
    moved = feedback_vector(query, feedback, 0.6)
    assert moved.shape == (1, 3) and np.linalg.norm(moved) == pytest.approx(1.0)
    assert moved[0, 1] / moved[0, 0] == pytest.approx(0.6)  # query + 0.6 * mean(feedback), normalised
    assert np.allclose(feedback_vector(query, feedback, 0.0), query)


def test_one_letter_options_and_sigils_are_what_the_dense_list_cannot_read():
    assert short_options("what does ls -h do? and $? after it") == {"-h", "$?"}
    assert short_options("kill -9 or --force, os.path.join, package.json") == {"-9"}


def test_a_one_letter_option_bm25_found_evens_the_priors():
    chunk = lambda i, text: Chunk(i, i, "g", 0, text, 0, 1, None, f"p{i}")  # noqa: E731
    holds = [Hit(chunk(1, "-h, --human-readable: print sizes like 1K"), 9.0)]
    lacks = [Hit(chunk(2, "ls lists a directory"), 9.0)]
    assert exact_option_weights("what does ls -h do?", holds, {}) == {"bm25": 4.0}
    assert exact_option_weights("what does ls -h do?", lacks, {"bm25": 0.5}) == {"bm25": 0.5}
    assert exact_option_weights("what does ls do?", holds, {}) == {}
    raised = adaptive_weights({"bm25": [9.0, 1.0], "dense": [0.9, 0.1]}, priors={"bm25": 0.8, "dense": 0.8})
    assert raised["bm25"] == pytest.approx(0.5)


# Plain words the question shares with the wrong documents: a bag-of-words dense list ranks
# those first, and only BM25 sees the `-h` the answer holds.
OPTION_DOCS = {
    "sizes.txt": "-h, --human-readable: with -l, print sizes like 1K 234M 2G.",
    "ls.txt": "What does ls do? ls lists what a directory holds, and what ls does not show is hidden.",
    "what.txt": "What does it do? It does what ls does: it lists, and what it lists is what you see.",
    "do.txt": "Do what ls does, do it well: what you do is what ls would do.",
    "long.txt": "The -l option of ls prints one file a line with its size and owner.",
}


def test_hybrid_search_puts_the_one_letter_option_asked_for_first(isolated_home):
    from fakes import HashEmbedder
    from ragcli.config import load_settings
    from ragcli.ingest.pipeline import ingest_documents
    from ragcli.retrieval.search import QueryOptions, Searcher
    from ragcli.types import ChunkSettings, Document

    documents = [Document(path=name, text=text, file_type="txt") for name, text in OPTION_DOCS.items()]
    chunking = ChunkSettings("word", 2000, 0)
    ingest_documents(isolated_home, documents, embedder=HashEmbedder(), group="medium", chunking=chunking)
    with Searcher(isolated_home, settings=load_settings(), embedder=HashEmbedder()) as searcher:
        asked = searcher.search("what does ls -h do?", QueryOptions(mode="hybrid", top_k=5))
        plain = searcher.search("what does ls do?", QueryOptions(mode="hybrid", top_k=5))
    assert asked[0].chunk.path == "sizes.txt"
    assert asked[0].sources["bm25"]["weight"] > asked[0].sources["dense"]["weight"]
    assert plain[0].chunk.path != "sizes.txt" and plain[0].sources["dense"]["weight"] > 0.5


def test_dense_feedback_follows_a_chunk_the_dense_list_ranks_well_when_dense_leads():
    # The keyword list's favourite "k" tops the fusion, but the dense list ranks it below its
    # top FEEDBACK_DENSE_DEPTH: feedback toward it would pull the dense list after the keyword
    # list's pick, so where dense leads the next fused chunk the dense list ranks well is chosen.
    dense = [(f"d{rank}", 0.9 - rank / 100) for rank in range(FEEDBACK_DENSE_DEPTH)] + [("k", 0.5)]
    fused = [("k", 0.95), ("d7", 0.9), ("d0", 0.8)]
    assert feedback_chunk(fused, dense, dense_weight=0.7) == "d7"
    assert feedback_chunk([("d3", 1.0), ("d0", 0.9)], dense, dense_weight=0.7) == "d3"  # agreed already
    assert feedback_chunk([("k", 1.0), ("x", 0.5)], dense, dense_weight=0.7) == "k"  # none agreed
    # Where BM25 leads, its top hit is the evidence feedback brings to the dense side.
    assert feedback_chunk(fused, dense, dense_weight=0.3) == "k"
