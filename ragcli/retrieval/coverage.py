"""Dense search over a group that is not fully embedded yet (searchable first, embedded next).

An ingest commits chunks before their vectors, so for a while dense search covers only part
of a group. Chunks without a vector must not vanish from dense or hybrid results: each one
BM25 found is put into the dense list at its BM25 rank (`splice`), i.e. it is ranked by BM25
alone, with the dense score of the hit it displaces so the list stays ordered. Hybrid fusion
then sees it as if both retrievers agreed on BM25's rank. `coverage_note` is the line a
query prints on stderr meanwhile.
"""

from __future__ import annotations

from typing import Sequence

from ragcli.types import Hit


def coverage_note(embedded: int, total: int) -> str | None:
    """The stderr line for a partly embedded group, or None when every chunk has a vector."""
    if total <= 0 or embedded >= total:
        return None
    share = embedded / total
    percent = f"{100 * share:.0f}" if share >= 0.01 or embedded == 0 else f"{100 * share:.1f}"
    return f"dense covers {percent}% of chunks; the rest by BM25 only (run `rag embed` to finish)"


def splice(
    dense: Sequence[tuple[int, float]], bm25_ids: Sequence[int], unembedded: set[int]
) -> list[tuple[int, float]]:
    """(chunk id, score) pairs with each unembedded BM25 hit inserted at its BM25 rank."""
    result = [pair for pair in dense if pair[0] not in unembedded]
    for rank, chunk_id in enumerate(bm25_ids):
        if chunk_id not in unembedded:
            continue
        position = min(rank, len(result))
        score = result[position][1] if position < len(result) else (result[-1][1] if result else 0.0)
        result.insert(position, (chunk_id, score))
    return result


def splice_hits(dense: Sequence[Hit], bm25: Sequence[Hit], unembedded: set[int]) -> list[Hit]:
    """`splice` for hits: the BM25 hits' chunks join the dense list; ranks renumbered from 1."""
    chunks = {hit.chunk.id: hit.chunk for hit in bm25}
    chunks.update({hit.chunk.id: hit.chunk for hit in dense})
    pairs = splice([(h.chunk.id, h.score) for h in dense], [h.chunk.id for h in bm25], unembedded)
    return [Hit(chunks[cid], score, rank) for rank, (cid, score) in enumerate(pairs, start=1)]
