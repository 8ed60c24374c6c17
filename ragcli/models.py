"""Choosing and loading the models a command uses (embedding now; generation later)."""

from __future__ import annotations

from ragcli.config import Settings


def embedder_for(settings: Settings, index_model: str | None = None, *, runtime: str = "onnx", notify=None):
    """Load the embedding model: the flag/env choice, else the index's own, else the default.

    An index records the packaged default by its public name, which `load_embedder` maps back
    to the packaged files. `notify` hears about slow first-use steps (see `load_embedder`).
    """
    from ragcli.embedding import load_embedder

    return load_embedder(
        settings.embed_model or index_model, cache_dir=settings.cache_dir, runtime=runtime, notify=notify
    )


def generator_for(settings: Settings, *, n_ctx: int | None = None, threads: int | None = None, seed: int = 0):
    """Load the GGUF model: --model / $RAG_MODEL / config, else the packaged SmolLM2."""
    from ragcli.llm import load_generator

    return load_generator(
        settings.gguf_model,
        settings,
        n_ctx=n_ctx or int(settings.get("ctx") or 2048),
        threads=threads or settings.get("threads"),
        seed=seed,
    )
