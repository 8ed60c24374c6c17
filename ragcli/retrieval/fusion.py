"""Fusing ranked lists from several retrievers: adaptive score fusion (the default), reciprocal
rank fusion and fixed-weight score fusion.

All are pure functions over ids; `fuse_hits` applies one to `Hit` lists and keeps, per fused
hit, each retriever's rank, score and the weight it had for this query in `Hit.sources` (what
`--explain` prints).

Why adaptive (README "Hybrid fusion"): Bruch, Gai and Ingber, "An Analysis of Fusion Functions
for Hybrid Retrieval" (ACM TOIS 2023) find a convex combination of normalised scores better
than RRF and sample-efficient to tune, but one global weight cannot suit both a folder where
BM25 leads and one where dense leads. So the weight is set per query from how much each list
separates its top from the rest (a score-spread query-performance predictor in the spirit of
NQC, Shtok et al., TOIS 2012): a flat or empty list has nothing to say and gets weight 0, and
the fusion becomes the other retriever. A list whose best hit stands clear of its second (the
top-1 gap, a score-difference predictor) is sure of that hit and weighs up to twice as much.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Mapping, Sequence, TypeVar

from ragcli.choices import DEFAULT_FUSION
from ragcli.types import Hit

Id = TypeVar("Id", bound=Hashable)


# The adaptive fusion's constants, chosen on the even-numbered queries of the shared sets
# (benchmarks/fusion_tuning.py). Scores are normalised against a theoretical floor (BM25
# cannot go below 0; for unit-vector cosine 0 is "unrelated"), not the list's own minimum,
# so a flat list stays flat instead of being stretched to [0, 1].
FLOORS: Mapping[str, float] = {"bm25": 0.0, "dense": 0.0}
# Prior trust before looking at the query: dense leads on most real sets measured (3 of 5).
PRIORS: Mapping[str, float] = {"bm25": 0.2, "dense": 0.8}
# The spread is measured from the top score down to the score at this rank.
SPREAD_DEPTH = 20
# A list whose best hit stands clear of its second is sure of that hit: its weight is
# multiplied by 1 + GAP_BOOST x `top_gap` (0 turns this off).
GAP_BOOST = 1.0
NORMALISATIONS = ("minmax", "zscore")
# A one-letter option or shell sigil (`-h`, `-9`, `$?`) is two characters a sentence encoder
# reads as punctuation and a letter: the dense list cannot tell `ls -h` from `ls -l`, while
# BM25 keeps the token whole (`ragcli.analysis.whole_token`). When the query names one and one
# of BM25's best `SHORT_OPTION_HITS` hits holds it, BM25's prior is multiplied by this (4: the
# two priors even), so the dense prior cannot bury the exact match.
SHORT_OPTION_BOOST = 4.0
SHORT_OPTION_HITS = 3
# The hybrid's dense feedback moves toward a chunk the dense list itself ranks this high
# (`feedback_chunk`): its top SPREAD_DEPTH, the depth the fusion reads it to.
FEEDBACK_DENSE_DEPTH = SPREAD_DEPTH


def _weight(weights: Mapping[str, float] | None, name: str) -> float:
    return 1.0 if weights is None else float(weights.get(name, 1.0))


def _ordered(scores: dict[Id, float], first_seen: dict[Id, int]) -> list[tuple[Id, float]]:
    # Ties keep the order in which the ids were first met, so results are deterministic.
    return sorted(scores.items(), key=lambda item: (-item[1], first_seen[item[0]]))


def rrf(
    rankings: Mapping[str, Sequence[Id]], k: int = 60, weights: Mapping[str, float] | None = None
) -> list[tuple[Id, float]]:
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
        import statistics  # with decimal and fractions: 3 ms a query process seldom needs

        mean = statistics.fmean(values)
        spread = statistics.pstdev(values)
        return [(v - mean) / spread if spread else 0.0 for v in values]
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 1.0 for v in values]


def score_fusion(
    results: Mapping[str, Sequence[tuple[Id, float]]],
    weights: Mapping[str, float] | None = None,
    method: str = "minmax",
) -> list[tuple[Id, float]]:
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


def spread(scores: Sequence[float], floor: float = 0.0, depth: int = SPREAD_DEPTH) -> float:
    """How far a list's top score stands above its score at rank `depth`, as a share of the top.

    (top - score at rank depth) / (top - floor), in [0, 1]: 0 for an empty or flat list (it
    cannot tell its hits apart), 1 when the list has fewer than `depth` hits (the missing ranks
    score the floor). Scores are best first.
    """
    if not scores or scores[0] <= floor:
        return 0.0
    low = scores[depth - 1] if len(scores) >= depth else floor
    return min(1.0, max(0.0, (scores[0] - low) / (scores[0] - floor)))


def top_gap(scores: Sequence[float], floor: float = 0.0) -> float:
    """How far a list's best score stands above its second, as a share of the best: in [0, 1].

    (top - second) / (top - floor): 0 for an empty list or a top at the floor, 1 for a single
    hit (the missing second scores the floor, as in `spread`). Scores are best first.
    """
    if not scores or scores[0] <= floor:
        return 0.0
    second = scores[1] if len(scores) > 1 else floor
    return min(1.0, max(0.0, (scores[0] - second) / (scores[0] - floor)))


def adaptive_weights(
    scores: Mapping[str, Sequence[float]],
    *,
    priors: Mapping[str, float] = PRIORS,
    floors: Mapping[str, float] = FLOORS,
    depth: int = SPREAD_DEPTH,
    gap_boost: float = GAP_BOOST,
) -> dict[str, float]:
    """Per-query weights: prior x `spread` x (1 + gap_boost x `top_gap`), divided by their sum.

    When no list has any spread (all empty or flat), the priors alone decide.

    Args:
        scores: retriever name -> its scores, best first.
        priors: retriever name -> prior trust (a missing name gets 1).
        floors: retriever name -> the lowest score it can meaningfully give (missing: 0).
        depth: the rank `spread` looks down to.
        gap_boost: how much a clear top hit raises its list's weight (0: not at all).
    """
    raw = {
        name: float(priors.get(name, 1.0))
        * spread(values, floors.get(name, 0.0), depth)
        * (1.0 + gap_boost * top_gap(values, floors.get(name, 0.0)))
        for name, values in scores.items()
    }
    total = sum(raw.values())
    if total <= 0:
        raw = {name: float(priors.get(name, 1.0)) for name in scores}
        total = sum(raw.values()) or 1.0
    return {name: value / total for name, value in raw.items()}


def floor_normalise(values: Sequence[float], floor: float = 0.0) -> list[float]:
    """Scores over (top - floor), clipped to [0, 1]: theoretical-min-max normalisation (Bruch et al.)."""
    top = max(values, default=floor)
    if top <= floor:
        return [0.0] * len(values)
    return [min(1.0, max(0.0, (v - floor) / (top - floor))) for v in values]


def adaptive_fusion(
    results: Mapping[str, Sequence[tuple[Id, float]]],
    *,
    priors: Mapping[str, float] = PRIORS,
    floors: Mapping[str, float] = FLOORS,
    depth: int = SPREAD_DEPTH,
    gap_boost: float = GAP_BOOST,
) -> tuple[list[tuple[Id, float]], dict[str, float]]:
    """Convex combination of floor-normalised scores with per-query weights (`adaptive_weights`).

    An id a list lacks takes that list's lowest normalised score, not 0: it ranked below
    everything the list returned, which says little more than that, and a 0 would punish
    documents only the other retriever found (the ones fusion exists to add). A list shorter
    than `depth` returned all it matched, so there an absent id scores 0.

    Args:
        results: retriever name -> (id, score) pairs, best first.
        priors: retriever name -> prior trust (multiplied into the weights).
        floors: retriever name -> score floor for normalisation and spread.
        depth: the rank `spread` looks down to.
        gap_boost: how much a clear top hit raises its list's weight (`adaptive_weights`).

    Returns:
        (id, fused score in [0, 1]) pairs, best first, and the weights used.
    """
    weights = adaptive_weights(
        {name: [s for _, s in pairs] for name, pairs in results.items()},
        priors=priors,
        floors=floors,
        depth=depth,
        gap_boost=gap_boost,
    )
    normalised = {
        name: dict(zip([i for i, _ in pairs], floor_normalise([s for _, s in pairs], floors.get(name, 0.0))))
        for name, pairs in results.items()
    }
    first_seen: dict[Id, int] = {}
    for pairs in results.values():
        for item, _ in pairs:
            first_seen.setdefault(item, len(first_seen))
    # A list shorter than `depth` returned everything it matched: what it lacks scores the floor.
    lowest = {
        name: min(values.values(), default=0.0) if len(values) >= depth else 0.0
        for name, values in normalised.items()
    }
    scores = {
        item: sum(weights[name] * normalised[name].get(item, lowest[name]) for name in results)
        for item in first_seen
    }
    return _ordered(scores, first_seen), weights


def short_options(text: str) -> set[str]:
    """The one-letter options and shell sigils of a text, kept whole: `-h`, `-9`, `$?`."""
    from ragcli.analysis import technical_terms

    return {term for term in technical_terms(text) if len(term) == 2 and term[0] in "-$"}


def exact_option_weights(query: str, bm25: Sequence[Hit], weights: Mapping[str, float]) -> dict[str, float]:
    """`weights` with BM25's raised by `SHORT_OPTION_BOOST` when the query names a one-letter
    option or sigil that one of BM25's best hits (best first) holds."""
    asked = short_options(query) if "-" in query or "$" in query else set()
    if asked and any(asked & short_options(hit.chunk.text) for hit in bm25[:SHORT_OPTION_HITS]):
        return {**weights, "bm25": _weight(weights, "bm25") * SHORT_OPTION_BOOST}
    return dict(weights)


def scaled_priors(names: Iterable[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    """The adaptive fusion's priors times the user's weights (`--weights`; missing = 1)."""
    return {name: PRIORS.get(name, 1.0) * _weight(weights, name) for name in names}


def fuse_hits(
    results: Mapping[str, Sequence[Hit]],
    *,
    fusion: str = DEFAULT_FUSION,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[Hit]:
    """Fuse per-retriever hit lists into one, best first, ranks from 1.

    Each fused hit's `sources` maps every retriever that found it to its rank, its score and
    the weight that retriever had in this query's fusion (summing to 1 over retrievers).

    Args:
        results: retriever name -> its hits, best first.
        fusion: "adaptive" (per-query weights), "rrf", or "score" (min-max, fixed weights).
        k: RRF constant.
        weights: retriever name -> weight; for "adaptive", multiplied into the priors.
    """
    chunks = {}
    sources: dict[int, dict[str, dict[str, float]]] = {}
    for name, hits in results.items():
        for rank, hit in enumerate(hits, start=1):
            chunks.setdefault(hit.chunk.id, hit.chunk)
            sources.setdefault(hit.chunk.id, {})[name] = {"rank": rank, "score": hit.score}
    scored = {name: [(h.chunk.id, h.score) for h in hits] for name, hits in results.items()}
    if fusion == "adaptive":
        fused, used = adaptive_fusion(scored, priors=scaled_priors(results, weights))
    else:
        total = sum(_weight(weights, name) for name in results) or 1.0
        used = {name: _weight(weights, name) / total for name in results}
        if fusion == "rrf":
            fused = rrf({name: [cid for cid, _ in pairs] for name, pairs in scored.items()}, k, weights)
        else:
            fused = score_fusion(scored, weights)
    for parts in sources.values():
        for name, part in parts.items():
            part["weight"] = round(used[name], 4)
    return [Hit(chunks[cid], score, rank, sources[cid]) for rank, (cid, score) in enumerate(fused, start=1)]


def feedback_chunk(
    fused: Sequence[tuple[Id, float]], dense: Sequence[tuple[Id, float]], dense_weight: float
) -> Id:
    """The chunk the dense query moves toward: the best fused chunk, except when dense leads
    the fusion (`dense_weight`, its weight in it, at least one half): then the best fused chunk
    that the dense list itself ranks in its top `FEEDBACK_DENSE_DEPTH` (the best fused chunk
    when there is none).

    Where BM25 leads, its top hit is the evidence the feedback exists to bring to the dense
    side. Where dense leads, a fused top that dense ranks far down is the keyword list's pick
    alone (a page repeating every query word, a "What it does" heading matching "what does X
    do?"): moving the dense query toward it made the dense list repeat that mistake and bury
    the passage it had near the top.
    """
    if dense_weight < 0.5:
        return fused[0][0]
    near = {chunk_id for chunk_id, _ in dense[:FEEDBACK_DENSE_DEPTH]}
    return next((chunk_id for chunk_id, _ in fused if chunk_id in near), fused[0][0])
