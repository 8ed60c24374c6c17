"""Choosing and loading the models a command uses (embedding now; generation later)."""

from __future__ import annotations

from ragcli.config import Settings


def embedder_for(
    settings: Settings,
    index_model: str | None = None,
    *,
    runtime: str | None = None,
    notify=None,
    index_fingerprint: str | None = None,
):
    """Load the embedding model: the flag/env choice, else the index's own, else the default.

    An index records the packaged default by its public name, which `load_embedder` maps back
    to the packaged files. `notify` hears about slow first-use steps (see `load_embedder`).
    The runtime: `runtime` when given, else the `embed_runtime` setting, else the one the
    index was built with (an int8 index's fingerprint ends in `INT8_SUFFIX`), else fp32.
    """
    from ragcli.embedding import load_embedder

    if runtime is None:
        runtime = embed_runtime(settings.get("embed_runtime"), index_fingerprint)
    return load_embedder(
        settings.embed_model or index_model, cache_dir=settings.cache_dir, runtime=runtime, notify=notify
    )


def embed_runtime(setting: str | None, index_fingerprint: str | None) -> str:
    """`load_embedder`'s runtime for the `embed_runtime` setting (fp32/int8) or, without one,
    for the runtime an index's fingerprint names."""
    from ragcli.embedding.loader import INT8_SUFFIX

    if setting is None:
        setting = "int8" if (index_fingerprint or "").endswith(INT8_SUFFIX) else "fp32"
    return "onnx-int8" if setting == "int8" else "onnx"


def generator_for(settings: Settings, *, n_ctx: int | None = None, threads: int | None = None, seed: int = 0):
    """Load the GGUF model: --model / $RAG_MODEL / config, else the packaged SmolLM2."""
    from ragcli.generation.llama import load_generator

    return load_generator(
        settings.gguf_model,
        settings,
        n_ctx=n_ctx or int(settings.get("ctx") or 2048),
        threads=threads or settings.get("threads"),
        seed=seed,
    )
