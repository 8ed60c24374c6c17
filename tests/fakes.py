"""Deterministic stand-ins for the models, for fast logic tests."""

from __future__ import annotations

import hashlib
import re

import numpy as np

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Bag-of-words vectors from hashed lower-cased words: similar texts get similar vectors."""

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.model_id = f"fake-hash-{dimension}"
        self.fingerprint = f"fake-hash-{dimension}-v1"
        self.max_tokens = 512
        self.calls = 0
        self.embedded_texts: list[str] = []

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        self.calls += 1
        self.embedded_texts.extend(texts)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.md5(word.encode()).digest()
                vectors[row, digest[0] % self.dimension] += 1.0
            norm = np.linalg.norm(vectors[row])
            vectors[row] = vectors[row] / norm if norm else vectors[row]
            if not norm:
                vectors[row, 0] = 1.0
        return vectors

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in _WORD.finditer(text)]
