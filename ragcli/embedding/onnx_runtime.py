"""`OnnxEmbedder`: the sentence-transformers model run by onnxruntime, without torch.

Importing onnxruntime takes about 0.2 s against 5-9 s for torch and sentence-transformers,
so queries and bulk ingest use this runtime; tests check its vectors against the reference.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ragcli.embedding.model_files import SUPPORTED_POOLING, ModelConfig
from ragcli.embedding.pooling import l2_normalise, pool
from ragcli.embedding.tokenization import ModelTokenizer, pad_batch
from ragcli.errors import ModelNotFound


def onnx_unsupported(config: ModelConfig) -> str | None:
    """Why the ONNX runtime cannot reproduce this model, or None when it can."""
    if config.extra_modules:
        return f"modules {', '.join(config.extra_modules)} are not implemented for ONNX"
    odd = [mode for mode in config.pooling if mode not in SUPPORTED_POOLING]
    if odd:
        return f"pooling {', '.join(odd)} is not implemented for ONNX"
    if not config.tokenizer_file.is_file():
        return f"{config.tokenizer_file} is missing"
    return None


CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def execution_providers(available: Sequence[str], device: str = "auto") -> list[str]:
    """The onnxruntime providers to ask for, best first.

    `auto` takes CUDA where the installed onnxruntime offers it (the `onnxruntime-gpu` build,
    `ragcli[gpu]`), with the CPU behind it for anything CUDA cannot run; the plain
    `onnxruntime` build offers only the CPU. `cpu` never asks for CUDA. The vectors are the
    same model's either way (cosine >= 0.999, tested where a GPU exists), so the fingerprint
    does not depend on the provider.
    """
    if device != "cpu" and CUDA in available:
        return [CUDA, CPU]
    return [CPU]


def cpu_count() -> int:
    """Cores this process may use (honours CPU affinity, unlike os.cpu_count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def session_options():
    """onnxruntime options for a model run once per query: every core, no log chatter, and idle
    pool threads that sleep instead of spinning for the next run.

    Spinning kept the second core busy after every query's embedding: a warm hybrid query over
    1,000,000 chunks cost 42 ms of CPU instead of 27, and with four other busy processes on two
    cores its median rose from 47 to 55 ms (20 ms either way on a quiet machine). Batch
    embedding while ingesting loses about 3% (8.5 s -> 8.8 s for 600 SciFact abstracts).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = cpu_count()
    options.log_severity_level = 3  # an export's shape hints otherwise warn on stderr
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


class OnnxEmbedder:
    """Embeds with an ONNX export of the model's transformer; pooling runs in numpy."""

    def __init__(
        self, config: ModelConfig, onnx_file: Path, *, model_id: str, fingerprint: str, device: str = "auto"
    ) -> None:
        """Open the ONNX session and the tokenizer.

        Args:
            config: the parsed model folder.
            onnx_file: the exported transformer (output: token embeddings).
            model_id: readable model name.
            fingerprint: the model's fingerprint (see `model_fingerprint`).
            device: "auto" (CUDA when onnxruntime offers it, else CPU) or "cpu"
                (`execution_providers`).

        Raises:
            ModelNotFound: onnxruntime cannot open the file.
        """
        import onnxruntime as ort

        options = session_options()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self._session = ort.InferenceSession(
                str(onnx_file),
                sess_options=options,
                providers=execution_providers(ort.get_available_providers(), device),
            )
        except Exception as exc:  # noqa: BLE001 - onnxruntime's errors share no base class
            raise ModelNotFound(
                f"cannot open {onnx_file}: {exc}; delete {onnx_file.parent} to export it again"
            ) from exc
        # What the session really runs on: CUDA offered but unusable (no driver) falls back.
        self.provider = self._session.get_providers()[0]
        self._inputs = {item.name for item in self._session.get_inputs()}
        self._tokenizer = ModelTokenizer(config)
        self._pooling = config.pooling
        self.model_id = model_id
        self.fingerprint = fingerprint
        self.max_tokens = self._tokenizer.max_tokens
        hidden = self._session.get_outputs()[0].shape[-1]
        # Pooled modes are concatenated; probe the model only if the export left it symbolic.
        if isinstance(hidden, int):
            self.dimension = hidden * len(self._pooling)
        else:
            self.dimension = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Embed texts; see `Embedder.embed`.

        Small batches are faster on CPU here: on 2 cores, 160 SciFact abstracts ran at
        21.7 / 20.6 / 16.2 texts/s with batches of 4 / 8 / 32 (attention and activations stay
        in cache), hence the default of 8; a GPU wants wide batches (default 64 there).

        Texts are sorted by token count so each batch pads to a similar length, then the
        rows are put back in input order.
        """
        if batch_size is None:
            batch_size = 64 if self.provider == CUDA else 8
        encoded = self._tokenizer.encode_arrays(texts)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
        result: np.ndarray | None = None
        for start in range(0, len(order), max(1, batch_size)):
            rows = order[start : start + max(1, batch_size)]
            vectors = self._run([encoded[i] for i in rows])
            if result is None:
                result = np.empty((len(encoded), vectors.shape[1]), dtype=np.float32)
            result[rows] = vectors
        if result is None:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        return result

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of the model's tokens; see `Embedder.token_offsets`."""
        return self._tokenizer.token_offsets(text)

    def _run(self, encoded: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        batch = pad_batch(encoded, self._tokenizer.pad_id)
        feed = {name: value for name, value in batch.items() if name in self._inputs}
        (token_embeddings,) = self._session.run(None, feed)[:1]
        pooled = pool(token_embeddings, batch["attention_mask"], self._pooling)
        # Normalise even when the model has no Normalize module: the protocol promises
        # unit vectors, and for models that have one this is a no-op.
        return l2_normalise(pooled)
