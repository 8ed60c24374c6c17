"""Sentence embeddings: the sentence-transformers model as the source of truth, run fast.

Queries and bulk ingest use `OnnxEmbedder` (onnxruntime + tokenizers, no torch import), on a
graph built from the model's safetensors by `bert_graph` (BERT family) or exported by torch
(other architectures, `[torch]` extra); `SentenceTransformerEmbedder` is the reference it is
tested against and the fallback when the extra is installed.

    embedder = load_embedder(None, cache_dir=settings.cache_dir)
    vectors = embedder.embed(["a question"])   # (1, 384) float32, unit length
"""

from ragcli.embedding.base import Embedder
from ragcli.embedding.export import ExportFailed, cached_onnx, export_onnx
from ragcli.embedding.loader import RUNTIMES, load_embedder
from ragcli.embedding.model_files import (
    DEFAULT_MODEL_ID,
    ModelConfig,
    default_model_path,
    model_fingerprint,
    read_model_config,
)
from ragcli.embedding.onnx_runtime import OnnxEmbedder
from ragcli.embedding.reference import SentenceTransformerEmbedder

__all__ = [
    "DEFAULT_MODEL_ID",
    "RUNTIMES",
    "Embedder",
    "ExportFailed",
    "ModelConfig",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "cached_onnx",
    "default_model_path",
    "export_onnx",
    "load_embedder",
    "model_fingerprint",
    "read_model_config",
]
