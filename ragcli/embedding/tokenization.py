"""The model's tokenizer, via the `tokenizers` library (no transformers import).

Mirrors sentence-transformers' `Transformer.tokenize`: strip each text, lower-case it when
`do_lower_case` is set, add special tokens and truncate to `max_seq_length`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragcli.errors import ModelNotFound
from ragcli.embedding.model_files import ModelConfig


class ModelTokenizer:
    """Batch encoding for the model and character offsets for the splitter."""

    def __init__(self, config: ModelConfig) -> None:
        """Load `tokenizer.json` from the model's transformer folder.

        Args:
            config: the parsed model folder.

        Raises:
            ModelNotFound: the folder has no fast-tokenizer file.
        """
        from tokenizers import Tokenizer

        if not config.tokenizer_file.is_file():
            raise ModelNotFound(
                f"{config.tokenizer_file} is missing: the fast runtime needs a fast tokenizer; "
                "re-save the model with a recent sentence-transformers, or use "
                "--embed-runtime sentence-transformers"
            )
        self._lower = config.do_lower_case
        self._file = config.tokenizer_file
        self._model_tok = Tokenizer.from_file(str(config.tokenizer_file))
        self._model_tok.no_padding()
        self._model_tok.enable_truncation(config.max_seq_length)
        self.pad_id = _pad_id(self._model_tok, config.transformer_dir)
        specials = len(self._model_tok.encode("", add_special_tokens=True).ids)
        self.max_tokens = config.max_seq_length - specials

    @functools.cached_property
    def _raw_tok(self) -> Any:
        """A second instance without truncation, for offsets; truncation is a setting of the
        tokenizer object, and only ingest needs offsets, so queries never load it."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._file))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return tokenizer

    def encode_arrays(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(ids, type_ids) per text as int64 arrays, for padding into a batch."""
        prepared = [text.strip() for text in texts]
        if self._lower:
            prepared = [text.lower() for text in prepared]
        encodings = self._model_tok.encode_batch(prepared)
        return [
            (np.asarray(e.ids, dtype=np.int64), np.asarray(e.type_ids, dtype=np.int64)) for e in encodings
        ]

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of every token of `text`: no special tokens, no truncation."""
        # `offsets` is already a list of (int, int) tuples: copying it cost a third as much
        # as the encoding itself on a folder of small files.
        return self._raw_tok.encode(text, add_special_tokens=False).offsets


def pad_batch(encoded: Sequence[tuple[np.ndarray, np.ndarray]], pad_id: int) -> dict[str, np.ndarray]:
    """Pad a batch to its longest member.

    Args:
        encoded: (ids, type_ids) per text.
        pad_id: id of the padding token.

    Returns:
        input_ids, attention_mask and token_type_ids, each (batch, longest) int64.
    """
    longest = max(len(ids) for ids, _ in encoded)
    input_ids = np.full((len(encoded), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(encoded), longest), dtype=np.int64)
    types = np.zeros((len(encoded), longest), dtype=np.int64)
    for row, (ids, type_ids) in enumerate(encoded):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
        types[row, : len(ids)] = type_ids
    return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": types}


def _pad_id(tokenizer: object, transformer_dir: Path) -> int:
    """The pad token id from tokenizer_config.json, else the usual names, else 0."""
    names = ["[PAD]", "<pad>", "<|padding|>"]
    config_file = transformer_dir / "tokenizer_config.json"
    if config_file.is_file():
        pad = json.loads(config_file.read_text(encoding="utf-8")).get("pad_token")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        if isinstance(pad, str):
            names.insert(0, pad)
    for name in names:
        token_id = tokenizer.token_to_id(name)  # type: ignore[attr-defined]
        if token_id is not None:
            return int(token_id)
    return 0
