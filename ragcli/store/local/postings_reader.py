"""Scoring BM25 queries from the postings of `ragcli.store.local.postings`, kept in memory between queries.

`PostingsReader` caches each term's live postings and their BM25 contributions per index
generation; a query sums the contributions of its terms per chunk (`numpy.bincount`) and keeps
the k best (`_best`), ties ordered by chunk id. A reader's first query, while numpy is not
imported, is scored in plain Python when its postings are few (`_top_k_in_python`): a new
`rag query` process then skips numpy's import, which costs more than the scoring.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
import sys
from array import array
from typing import TYPE_CHECKING, Hashable, Sequence

from ragcli.store.local.postings import (
    B,
    GENERATION_KEY,
    IDF_FLOOR,
    K1,
    collection_stats,
    deleted_ids,
    deleted_rows,
    term_blobs,
    term_postings,
    term_scores,
)

if TYPE_CHECKING:
    import numpy as np


def top_k(
    db: sqlite3.Connection, group: str, terms: Sequence[str], k: int, allowed: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """The k best (chunk id, BM25 score) pairs for analysed query terms, best first.

    Reads everything from the database; `PostingsReader` does the same with a cache.
    Scores are rank-bm25's `BM25Okapi(k1=1.2, b=0.75).get_scores` on the same terms, bit
    for bit (same expressions, same order of additions): a repeated query term counts each
    time, idf = log(N - n + 0.5) - log(n + 0.5), and only an idf <= 0 differs (IDF_FLOOR).
    Chunks scoring 0 are not hits. Equal scores are ordered by chunk id.

    Args:
        allowed: if given, only these chunk ids may be returned.
    """
    return PostingsReader().top_k(db, group, terms, k, allowed)


class PostingsReader:
    """Scores queries from postings kept in memory between queries of one process.

    A term's live postings and their BM25 contributions are computed once per index
    generation (advanced by every write transaction, read in the query's snapshot), so a
    warm query costs one tiny SELECT plus numpy work; a new generation starts afresh.
    At most `max_postings` postings are kept (then the cache restarts).
    """

    def __init__(self, max_postings: int = 8_000_000) -> None:
        self.max_postings = max_postings
        self._state: dict[str, tuple[str | None, int, float, np.ndarray]] = {}
        self._terms: dict[str, dict[str, tuple[np.ndarray, np.ndarray, tuple[int, int]]]] = {}
        self._held = 0
        self._versions: dict[str, Hashable] = {}
        self._answered = False
        self._allowed: tuple[Sequence[int] | None, np.ndarray | None] = (None, None)
        self._scratch = _Scratch()

    def _group(self, db: sqlite3.Connection, group: str, version: Hashable | None) -> tuple[int, float, dict]:
        """(N, average length, term cache) of a group at the snapshot's generation.

        `version` (`Store.version()`, read in the same snapshot) skips reading the generation
        while the database is unchanged since this group's last query.
        """
        if version is not None and self._versions.get(group) == version:
            state = self._state[group]
            return state[1], state[2], self._terms[group]
        self._versions.pop(group, None)
        row = db.execute("SELECT value FROM meta WHERE key = ?", [GENERATION_KEY]).fetchone()
        generation = row[0] if row else None
        state = self._state.get(group)
        if state is None or state[0] != generation or generation is None:
            docs, average = collection_stats(db, group)
            self._state[group] = (generation, docs, average, deleted_ids(db, group=group))
            self._held -= sum(len(entry[0]) for entry in self._terms.pop(group, {}).values())
            self._terms[group] = {}
        if version is not None:
            self._versions[group] = version
        return self._state[group][1], self._state[group][2], self._terms[group]

    def _term(self, db: sqlite3.Connection, group: str, term: str, cache: dict) -> _Postings:
        """A term's cached (ids, contributions, lowest id, highest id, count), read on a miss."""
        if term not in cache:
            _, docs, average, deleted = self._state[group]
            ids, tfs, lengths = term_postings(db, group, term, deleted)
            if self._held + len(ids) > self.max_postings:
                for terms in self._terms.values():
                    terms.clear()
                self._held = 0
            low, high = (int(ids.min()), int(ids.max())) if len(ids) else (0, 0)
            cache[term] = ids, term_scores(ids, tfs, lengths, docs, average), low, high, len(ids)
            self._held += len(ids)
        return cache[term]

    def top_k(
        self,
        db: sqlite3.Connection,
        group: str,
        terms: Sequence[str],
        k: int,
        allowed: Sequence[int] | None = None,
        version: Hashable | None = None,
    ) -> list[tuple[int, float]]:
        """Like the module's `top_k` (same scores, same order); call inside one snapshot.

        Args:
            allowed: if given, only these chunk ids may be returned; pass the same object to
                every query of a batch (it is turned into an array once).
            version: the database's `Store.version()` read in this snapshot, if known.
        """
        if not terms or k <= 0:
            return []
        first, self._answered = not self._answered, True
        if first and "numpy" not in sys.modules and array("I").itemsize == 4:
            found = _top_k_in_python(db, group, terms, k, allowed)
            if found is not None:
                return found
        import numpy as np

        if allowed is not None and not isinstance(allowed, np.ndarray):
            if self._allowed[0] is not allowed:
                self._allowed = allowed, np.asarray(allowed, dtype=np.int64)
            allowed = self._allowed[1]

        docs, _, cache = self._group(db, group, version)
        if not docs:
            return []
        postings = [cache.get(term) or self._term(db, group, term, cache) for term in terms]
        return self._ranked(postings, k, allowed)

    def live_counts(
        self, db: sqlite3.Connection, group: str, terms: Sequence[str], version: Hashable | None = None
    ) -> tuple[int, dict[str, int]]:
        """(the group's live chunks, how many of them hold each term), from the postings kept
        (read on a miss, like `top_k`'s); call inside one snapshot."""
        docs, _, cache = self._group(db, group, version)
        if not docs:
            return 0, {}
        return docs, {term: (cache.get(term) or self._term(db, group, term, cache))[4] for term in terms}

    def top_k_cached(
        self, group: str, terms: Sequence[str], k: int, version: Hashable
    ) -> list[tuple[int, float]] | None:
        """`top_k` from memory alone, without a read of the database: None unless this group
        was last read at `version` (`Store.version()`, just read) and every term's postings
        are kept. What is kept was read at that version, so the answer is the one a snapshot
        taken now would give."""
        if self._versions.get(group) != version:
            return None
        cache = self._terms[group]
        try:
            postings = [cache[term] for term in terms]
        except KeyError:
            return None
        return self._ranked(postings, k, None) if k > 0 and self._state[group][1] else []

    def _ranked(
        self, postings: list[_Postings], k: int, allowed: np.ndarray | None
    ) -> list[tuple[int, float]]:
        """The k best of the query terms' postings (`top_k` after reading them)."""
        import numpy as np

        parts, probe, fewest = [], None, 0
        count, low, high = 0, None, 0  # of all the query's postings
        for part in postings:
            if part[4]:
                parts.append(part)
                count += part[4]
                low = part[2] if low is None or part[2] < low else low
                high = part[3] if part[3] > high else high
                # The rarest term with at least k chunks: the k-th best total among its
                # chunks bounds the k-th best overall from below (`_best_in_range`).
                if part[4] >= k and (part[4] < fewest or not fewest):
                    probe, fewest = part[0], part[4]
        if low is None:
            return []
        start = 0 if low <= high - low else low  # `_best`'s choice of the accumulator's origin
        if allowed is None and high - start < 4 * count + RANGE_SLOTS:  # the usual query
            return self._best_on_range(parts, start, high - start + 1, count, k, probe)
        if len(parts) == 1:
            ids, partial = parts[0][0], parts[0][1]
        else:
            ids = np.concatenate([part[0] for part in parts])
            partial = np.concatenate([part[1] for part in parts])
        return _best(ids, partial, k, allowed, repeats=len(parts), bounds=(low, high), probe=probe)

    def _best_on_range(
        self, parts: list[_Postings], start: int, size: int, count: int, k: int, probe: np.ndarray | None
    ) -> list[tuple[int, float]]:
        """`_best` for postings whose ids span `size` slots from `start`, summed in the
        buffers `_scratch` keeps: the same additions in the same order (`numpy.add.at`
        over the postings in query order, from 0.0, as `numpy.bincount` does), so the
        same totals bit for bit."""
        import numpy as np

        totals, ids, partial = self._scratch.buffers(size, count)
        totals.fill(0.0)
        np.concatenate([part[0] for part in parts], out=ids)
        np.concatenate([part[1] for part in parts], out=partial)
        if start:
            ids -= start
            probe = None if probe is None else probe - start
        np.add.at(totals, ids, partial)
        return _best_in_range(totals, start, k, probe)


# Ids spread over fewer slots than 4 a posting plus this are summed in one array over their
# range (`PostingsReader._best_on_range`): clearing and scanning 32K slots costs about as
# much as sorting a few thousand postings (`_best`).
RANGE_SLOTS = 32_768


# A term's cached postings: (chunk ids, BM25 contributions, lowest id, highest id, count).
_Postings = tuple  # "tuple[np.ndarray, np.ndarray, int, int, int]", kept plain for the lazy numpy


class _Scratch:
    """Arrays a reader sums its queries in, reused from query to query.

    Fresh arrays of a warm query's size (tens of KB) cost about as much as the additions:
    the allocator hands back memory it returned to the system, and every page faults again
    (with `_best_in_range`'s narrower candidates, 0.030 -> 0.026 ms a SciFact query). Arrays
    past `keep` elements are not kept, so at most 3 x 8 x `keep` bytes (48 MB) stay held.
    Like its connection, a reader serves one query at a time.
    """

    def __init__(self, keep: int = 1 << 21) -> None:
        self.keep = keep
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def buffers(self, size: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(float64 totals of `size`, int64 ids and float64 partial scores of `count`), not zeroed."""
        import numpy as np

        arrays = self._arrays
        if arrays is None or len(arrays[0]) < size or len(arrays[1]) < count:
            longest = max(size, count, 0 if arrays is None else len(arrays[0]))
            length = 1 << max(longest - 1, 1).bit_length()  # room to grow: the next power of two
            arrays = np.empty(length), np.empty(length, dtype=np.int64), np.empty(length)
            if length <= self.keep:
                self._arrays = arrays
        return arrays[0][:size], arrays[1][:count], arrays[2][:count]


# A query with more postings than this is scored with numpy even in a new process. Importing
# numpy costs 0.06-0.12 s of CPU on a 2-core x86 machine (its BLAS threads included); the plain
# Python loop costs about 0.5 µs a posting, so up to here it costs at most half the import.
PYTHON_POSTINGS = 50_000


def _top_k_in_python(
    db: sqlite3.Connection, group: str, terms: Sequence[str], k: int, allowed: Sequence[int] | None = None
) -> list | None:
    """`PostingsReader.top_k` without numpy: the same scores (the same float64 expressions,
    added per chunk in the same order as `numpy.bincount`) and the same order, ties by chunk
    id; caches nothing. None when the terms hold more than PYTHON_POSTINGS postings."""
    docs, average = collection_stats(db, group)
    if not docs:
        return []
    blobs, held = [], 0
    for term in terms:
        ids, tfs, lengths = term_blobs(db, group, term)
        held += len(ids) // 8
        if held > PYTHON_POSTINGS:
            return None
        blobs.append((array("q", ids), array("I", tfs), array("I", lengths)))
    deleted = set(deleted_rows(db, group=group)) if held else set()
    totals: dict[int, float] = {}
    for ids, tfs, lengths in blobs:
        postings = [posting for posting in zip(ids, tfs, lengths) if posting[0] not in deleted]
        if not postings:
            continue
        idf = math.log(docs - len(postings) + 0.5) - math.log(len(postings) + 0.5)
        idf = IDF_FLOOR if idf <= 0 else idf
        for chunk_id, tf, length in postings:  # `term_scores`, one posting at a time
            score = idf * (tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average)))
            totals[chunk_id] = totals.get(chunk_id, 0.0) + score
    if allowed is not None:
        kept = set(allowed)
        totals = {chunk_id: total for chunk_id, total in totals.items() if chunk_id in kept}
    return heapq.nsmallest(k, totals.items(), key=_best_first)


def _best_first(item: tuple[int, float]) -> tuple[float, int]:
    return -item[1], item[0]


def _best_in_range(
    totals: np.ndarray, low: int, k: int, probe: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """The k best of a dense accumulator (index + low = chunk id; 0 = no match).

    Args:
        probe: at least k distinct chunk ids (minus `low`), e.g. one query term's postings:
            the k-th best total among them is a lower bound of the k-th best of all, found by
            partitioning a short array instead of the whole range (which cost more than the
            scoring: 9,500 chunks, 10 query terms).
    """
    import numpy as np

    kth = _kth_best(totals, probe, k) if probe is not None and len(probe) >= k else 0.0
    # Everything tied with the k-th best stays a candidate, so ties resolve by chunk id.
    picked = (totals >= kth if kth > 0 else totals).nonzero()[0]
    scores = totals[picked]
    if len(picked) > 2 * k:  # a loose bound: the candidates' own k-th best is exact
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        tied = (scores >= kth).nonzero()[0]
        picked, scores = picked[tied], scores[tied]
    # The few left (k, unless tied) sorted in Python: cheaper than `lexsort`'s call.
    ranked = sorted(zip((-scores).tolist(), picked.tolist()))[:k]
    return [(chunk + low, -negated) for negated, chunk in ranked]


def _kth_best(totals: np.ndarray, probe: np.ndarray, k: int) -> float:
    """The k-th best total among `probe`'s (at least k distinct) slots of `totals`."""
    sample = totals[probe]  # a copy: partitioned in place
    sample.partition(len(sample) - k)
    return sample[len(sample) - k]


def _best(
    ids: np.ndarray,
    partial: np.ndarray,
    k: int,
    allowed: np.ndarray | None,
    repeats: int | None = None,
    bounds: tuple[int, int] | None = None,
    probe: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """Sum partial scores per chunk id and keep the k best.

    Args:
        repeats: how often one chunk id can occur in `ids` at most (the query's term
            count); None when unknown.
        bounds: (min, max) of `ids` when known. It bounds the threshold search: no scan of the
            whole id range, whose random-sparsity `nonzero` cost more than the scoring.
        probe: distinct ids among `ids` (one term's postings) for `_best_in_range`'s bound.
    """
    import numpy as np

    low, high = (int(ids.min()), int(ids.max())) if bounds is None else bounds
    if low <= high - low:  # ids from 0 cost fewer extra slots than shifting them costs time
        low = 0
    if high - low < 8 * len(ids) + 1_000_000:  # a dense accumulator over the id range
        shifted = ids - low if low else ids
        totals = np.bincount(shifted, weights=partial)
        if allowed is None and len(totals) <= 4 * len(ids):  # small range: select on it directly
            return _best_in_range(totals, low, k, None if probe is None else (probe - low if low else probe))
        chunk_ids, scores = ids, totals[shifted]  # each id's total, once per occurrence
        if allowed is None and probe is not None and len(probe) >= k:
            # The probe's bound (`_best_in_range`) over the postings: the usual few candidates
            # are deduplicated and sorted in Python, cheaper than `np.unique` and `lexsort`.
            kth = _kth_best(totals, probe - low if low else probe, k)
            picked = (scores >= kth).nonzero()[0]
            if kth > 0 and len(picked) <= 16 * k:
                found = set(zip((-scores[picked]).tolist(), ids[picked].tolist()))
                return [(chunk, -negated) for negated, chunk in sorted(found)[:k]]
    else:  # very sparse ids: sort instead of allocating the range
        chunk_ids, inverse = np.unique(ids, return_inverse=True)
        scores, repeats = np.bincount(inverse, weights=partial), 1
    if allowed is not None:
        keep = np.isin(chunk_ids, allowed)
        chunk_ids, scores = chunk_ids[keep], scores[keep]
    if not len(scores):
        return []
    # Fewer than k ids score above the k-th best, each at most `repeats` times: every
    # candidate (ties with the k-th best included, so ties resolve by chunk id) scores
    # at least the value at this position.
    position = len(scores) if repeats is None else min(len(scores), (k - 1) * repeats + 1)
    threshold = np.partition(scores, len(scores) - position)[len(scores) - position]
    picked = scores >= threshold
    chunk_ids, first = np.unique(chunk_ids[picked], return_index=True)
    scores = scores[picked][first]
    order = np.lexsort((chunk_ids, -scores))[:k]
    return list(zip(chunk_ids[order].tolist(), scores[order].tolist()))
