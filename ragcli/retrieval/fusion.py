"""Fusing ranked lists from several retrievers: reciprocal rank fusion and score fusion.

Both are pure functions over ids; `fuse_hits` applies one to `Hit` lists and keeps, per
fused hit, each retriever's rank and score in `Hit.sources` (what `--explain` prints).
"""

from __future__ import annotations

import statistics
from typing import Hashable, Mapping, Sequence, TypeVar

from ragcli.types import Hit

Id = TypeVar("Id", bound=Hashable)

FUSIONS = ("rrf", "score")
NORMALISATIONS = ("minmax", "zscore")


def _weight(weights: Mapping[str, float] | None, name: str) -> float:
    return 1.0 if weights is None else float(weights.get(name, 1.0))


def _ordered(scores: dict[Id, float], first_seen: dict[Id, int]) -> list[tuple[Id, float]]:
    # Ties keep the order in which the ids were first met, so results are deterministic.
    return sorted(scores.items(), key=lambda item: (-item[1], first_seen[item[0]]))


def rrf(rankings: Mapping[str, Sequence[Id]], k: int = 60,
        weights: Mapping[str, float] | None = None) -> list[tuple[Id, float]]:
    """Reciprocal rank fusion: score(d) = sum over lists of weight / (k + rank(d)), rank from 1.

    Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
    individual Rank Learning Methods", SIGIR 2009.

    Args:
        rankings: retriever name -> ids, best first.
        k: the smoothing constant (60 in the paper).
        weights: retriever name -> weight (default 1 each).

    Returns:
        (id, fused score) pairs, best first.
    """
    scores: dict[Id, float] = {}
    first_seen: dict[Id, int] = {}
    for name, ids in rankings.items():
        weight = _weight(weights, name)
        for rank, item in enumerate(ids, start=1):
            first_seen.setdefault(item, len(first_seen))
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return _ordered(scores, first_seen)


def normalise(values: Sequence[float], method: str = "minmax") -> list[float]:
    """Min-max scaling to [0, 1] or z-scores; a constant list maps to all 1 (minmax) or 0 (z)."""
    if not values:
        return []
    if method == "zscore":
        mean = statistics.fmean(values)
        spread = statistics.pstdev(values)
        return [(v - mean) / spread if spread else 0.0 for v in values]
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 1.0 for v in values]


def score_fusion(results: Mapping[str, Sequence[tuple[Id, float]]],
                 weights: Mapping[str, float] | None = None,
                 method: str = "minmax") -> list[tuple[Id, float]]:
    """Convex combination of per-retriever normalised scores (an id a list lacks adds 0 there).

    Args:
        results: retriever name -> (id, score) pairs, best first.
        weights: retriever name -> weight; divided by their sum, so only ratios matter.
        method: "minmax" or "zscore" normalisation per list.

    Returns:
        (id, fused score) pairs, best first.
    """
    total = sum(_weight(weights, name) for name in results) or 1.0
    scores: dict[Id, float] = {}
    first_seen: dict[Id, int] = {}
    for name, pairs in results.items():
        share = _weight(weights, name) / total
        for (item, _), value in zip(pairs, normalise([s for _, s in pairs], method)):
            first_seen.setdefault(item, len(first_seen))
            scores[item] = scores.get(item, 0.0) + share * value
    return _ordered(scores, first_seen)


def fuse_hits(results: Mapping[str, Sequence[Hit]], *, fusion: str = "rrf", k: int = 60,
              weights: Mapping[str, float] | None = None) -> list[Hit]:
    """Fuse per-retriever hit lists into one, best first, ranks from 1.

    Each fused hit's `sources` maps every retriever that found it to its rank and score there.

    Args:
        results: retriever name -> its hits, best first.
        fusion: "rrf" or "score" (min-max normalised convex combination).
        k: RRF constant.
        weights: retriever name -> weight.
    """
    chunks = {}
    sources: dict[int, dict[str, dict[str, float]]] = {}
    for name, hits in results.items():
        for rank, hit in enumerate(hits, start=1):
            chunks.setdefault(hit.chunk.id, hit.chunk)
            sources.setdefault(hit.chunk.id, {})[name] = {"rank": rank, "score": hit.score}
    if fusion == "rrf":
        fused = rrf({name: [h.chunk.id for h in hits] for name, hits in results.items()}, k, weights)
    else:
        fused = score_fusion({name: [(h.chunk.id, h.score) for h in hits] for name, hits in results.items()},
                             weights)
    return [Hit(chunks[cid], score, rank, sources[cid]) for rank, (cid, score) in enumerate(fused, start=1)]
