"""The `Embedder` protocol every embedding runtime implements."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    Attributes:
        model_id: a readable name of the model (the default's hub name, or a folder path).
        dimension: length of each vector.
        fingerprint: stable hash of the model files, pooling and normalisation; equal for
            every runtime that gives the same vectors, so an index records it and refuses
            vectors from another model.
        max_tokens: how many tokens (as counted by `token_offsets`) one text may have before
            the model truncates it; special tokens are already subtracted.
    """

    model_id: str
    dimension: int
    fingerprint: str
    max_tokens: int

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Embed texts.

        Args:
            texts: the texts; longer ones are truncated to the model's limit.
            batch_size: texts per forward pass.

        Returns:
            float32 array (len(texts), dimension), L2-normalised, rows in input order.
        """
        ...

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of each model token in `text`, without special tokens
        and without truncation; the splitter builds token windows from these."""
        ...
