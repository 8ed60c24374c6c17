"""Choosing and loading the models a command uses (embedding now; generation later)."""

from __future__ import annotations

from ragcli.config import Settings


def embedder_for(settings: Settings, index_model: str | None = None, *, runtime: str = "onnx"):
    """Load the embedding model: the flag/env choice, else the index's own, else the default."""
    from ragcli.embedding import load_embedder

    model = settings.embed_model or index_model
    return load_embedder(model, cache_dir=settings.cache_dir, runtime=runtime)
