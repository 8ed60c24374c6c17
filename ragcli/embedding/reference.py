"""`SentenceTransformerEmbedder`: the reference runtime (torch + sentence-transformers).

Slow to import (5-9 s) but it is the definition of the vectors; the ONNX runtime is tested
against it, and it is the fallback when no ONNX export can be made. It needs the `[torch]`
extra (`pip install 'ragcli[torch]'`), which the default install leaves out.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ragcli.embedding.model_files import ModelConfig
from ragcli.embedding.pooling import l2_normalise
from ragcli.embedding.tokenization import ModelTokenizer
from ragcli.errors import ModelNotFound


class SentenceTransformerEmbedder:
    """Embeds with `sentence_transformers.SentenceTransformer` on the CPU."""

    def __init__(self, config: ModelConfig, *, model_id: str, fingerprint: str) -> None:
        """Load the model from its local folder; the hub is never contacted.

        Args:
            config: the parsed model folder.
            model_id: readable model name.
            fingerprint: the model's fingerprint (see `model_fingerprint`).

        Raises:
            ModelNotFound: sentence-transformers is not installed or cannot load the folder.
        """
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelNotFound(
                "sentence-transformers is not installed: run pip install 'ragcli[torch]'"
            ) from exc
        try:
            self._model = SentenceTransformer(str(config.path), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelNotFound(f"cannot load the embedding model {config.path}: {exc}") from exc
        # Offsets come from the same tokenizer.json as the ONNX runtime, so both runtimes
        # split text identically.
        self._tokenizer = ModelTokenizer(config) if config.tokenizer_file.is_file() else None
        self.model_id = model_id
        self.fingerprint = fingerprint
        self.max_tokens = self._max_tokens(config)
        # sentence-transformers 6 renamed the method; older releases only have the old name.
        dimension = getattr(self._model, "get_embedding_dimension", None) or getattr(
            self._model, "get_sentence_embedding_dimension"
        )
        self.dimension = int(dimension() or 0)

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Embed texts; see `Embedder.embed`."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return l2_normalise(np.asarray(vectors, dtype=np.float32))

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of the model's tokens; see `Embedder.token_offsets`."""
        if self._tokenizer is not None:
            return self._tokenizer.token_offsets(text)
        encoded = self._model.tokenizer(
            text, add_special_tokens=False, truncation=False, return_offsets_mapping=True
        )
        return [(int(start), int(end)) for start, end in encoded["offset_mapping"]]

    def _max_tokens(self, config: ModelConfig) -> int:
        if self._tokenizer is not None:
            return self._tokenizer.max_tokens
        specials = self._model.tokenizer.num_special_tokens_to_add(pair=False)
        return config.max_seq_length - specials
