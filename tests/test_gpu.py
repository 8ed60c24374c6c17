"""Embedding on a GPU: the provider choice (everywhere) and equal vectors (where CUDA exists)."""

from __future__ import annotations

import numpy as np
import pytest

from ragcli.embedding.onnx_runtime import CPU, CUDA, execution_providers


def test_cuda_is_asked_for_only_where_onnxruntime_offers_it():
    assert execution_providers([CPU]) == [CPU]  # the plain onnxruntime build
    assert execution_providers(["AzureExecutionProvider", CPU]) == [CPU]
    assert execution_providers([CUDA, CPU]) == [CUDA, CPU]  # onnxruntime-gpu: CPU behind it
    assert execution_providers([CUDA, CPU], device="cpu") == [CPU]


def cuda_reason() -> str | None:
    """Why the CUDA test cannot run here, or None when it can."""
    import onnxruntime as ort

    if CUDA not in ort.get_available_providers():
        return "onnxruntime has no CUDA provider here (install ragcli[gpu] on a machine with an NVIDIA GPU)"
    return None


def test_vectors_on_the_gpu_equal_the_cpu_ones(tmp_path):
    reason = cuda_reason()
    if reason:
        pytest.skip(reason)
    from ragcli.embedding import load_embedder
    from ragcli.embedding.loader import _resolve, cached_onnx
    from ragcli.embedding.model_files import model_fingerprint
    from ragcli.embedding.onnx_runtime import OnnxEmbedder

    default = load_embedder(None, cache_dir=tmp_path)
    if default.provider != CUDA:
        pytest.skip("onnxruntime offers CUDA but could not start a session on it (no usable GPU)")
    config, model_id = _resolve(None)
    fingerprint = model_fingerprint(config, cache_dir=tmp_path)
    onnx = cached_onnx(config, tmp_path, fingerprint=fingerprint)
    cpu = OnnxEmbedder(config, onnx, model_id=model_id, fingerprint=fingerprint, device="cpu")
    texts = [
        f"Paragraph {i}: a lighthouse keeper logs the weather and the ships." * (1 + i % 5) for i in range(40)
    ]
    on_gpu, on_cpu = default.embed(texts), cpu.embed(texts)
    assert cpu.provider == CPU and default.fingerprint == cpu.fingerprint
    assert float(np.min(np.sum(on_gpu * on_cpu, axis=1))) >= 0.999
