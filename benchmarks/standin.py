"""Stand-ins for benchmarks that measure the store, not the model: embedders and a synthetic
vocabulary (real common words on top, pronounceable pseudo-words below)."""

from __future__ import annotations

import hashlib
import re

import numpy as np

_WORD = re.compile(r"\w+")


class HashVectors:
    """A pseudo-random unit vector per text (from its hash): fast, deterministic, no structure."""

    def __init__(self, model_id: str, fingerprint: str, dimension: int) -> None:
        self.model_id, self.fingerprint, self.dimension = model_id, fingerprint, dimension

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        rows = [
            np.random.default_rng(
                int.from_bytes(hashlib.sha1(t.encode()).digest()[:8], "little")
            ).standard_normal(self.dimension)
            for t in texts
        ]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in _WORD.finditer(text)]


class BagVectors(HashVectors):
    """Sum of fixed random word vectors, normalised: texts sharing words lie close, as with a
    real embedding model, so nearest-neighbour structure (and ANN recall) is realistic-ish."""

    def __init__(self, model_id: str, fingerprint: str, dimension: int, buckets: int = 1 << 16) -> None:
        super().__init__(model_id, fingerprint, dimension)
        self._table = np.random.default_rng(42).standard_normal((buckets, dimension)).astype(np.float32)

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower()) or ["<empty>"]
            rows = [
                int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little")
                % len(self._table)
                for w in words
            ]
            vectors[row] = self._table[rows].sum(axis=0)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """Pronounceable pseudo-words, unique."""
    onsets, vowels = list("bdfgklmnprstvz") + ["br", "st", "tr", "ch"], list("aeiou") + ["ai", "ou"]
    words: set[str] = set()
    while len(words) < size:
        parts = rng.integers(2, 4)
        words.add(
            "".join(
                onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))] for _ in range(parts)
            )
        )
    return sorted(words)


# The commonest English words, in frequency order: as in real text they take the top
# Zipf ranks, and the analyzer drops them.
COMMON = (
    "the of and to a in is that for it as was with be by on not he this are or his from at which "
    "but they have an had one you were her all she there would their we him been has when who will "
    "more no if out so said what up its about into than them can only other new some could time "
    "these two may then do first any my now such like our over man me even most made after "
    "also"
).split()
