"""Choosing and loading the models a command uses (embedding now; generation later)."""

from __future__ import annotations

from ragcli.config import Settings


def embedder_for(settings: Settings, index_model: str | None = None, *, runtime: str = "onnx"):
    """Load the embedding model: the flag/env choice, else the index's own, else the default.

    The index records the packaged default by its public name
    (sentence-transformers/all-MiniLM-L6-v2), which maps back to the packaged files.
    """
    from ragcli.embedding import load_embedder
    from ragcli.embedding.model_files import DEFAULT_MODEL_ID

    model = settings.embed_model or index_model
    if model == DEFAULT_MODEL_ID:
        model = None
    return load_embedder(model, cache_dir=settings.cache_dir, runtime=runtime)


def generator_for(settings: Settings, *, n_ctx: int | None = None, threads: int | None = None, seed: int = 0):
    """Load the GGUF model: --model / $RAG_MODEL / config, else the packaged SmolLM2."""
    from ragcli.llm import load_generator

    return load_generator(settings.gguf_model, settings, n_ctx=n_ctx or int(settings.get("ctx") or 2048),
                          threads=threads or settings.get("threads"), seed=seed)
