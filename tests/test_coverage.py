"""Chunks without a vector keep their BM25 rank in dense lists; the coverage line."""

from __future__ import annotations

from ragcli.retrieval.coverage import coverage_note, splice


def test_unembedded_bm25_hits_take_their_bm25_rank_in_the_dense_list():
    dense = [(1, 0.9), (2, 0.8), (3, 0.7)]
    bm25 = [7, 2, 8, 1]  # 7 and 8 have no vector
    spliced = splice(dense, bm25, {7, 8})
    assert [cid for cid, _ in spliced] == [7, 1, 8, 2, 3]
    assert [score for _, score in spliced] == [0.9, 0.9, 0.8, 0.8, 0.7]  # still ordered
    assert [cid for cid, _ in splice([], bm25, {7, 8})] == [7, 8]  # nothing embedded: BM25 order
    assert splice(dense, bm25, set()) == dense


def test_the_coverage_line_names_the_share():
    assert coverage_note(41, 100).startswith("dense covers 41% of chunks; the rest by BM25 only")
    assert coverage_note(0, 10).startswith("dense covers 0% of chunks")
    assert coverage_note(10, 10) is None and coverage_note(0, 0) is None
