"""The embedding model an index is bound to: checked before an ingest writes, recorded after.

One index holds the vectors of one model (and one runtime of it); mixing two would make every
distance meaningless, so a different model is refused with the command that rebuilds.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from ragcli.errors import IndexMismatch
from ragcli.store.interface import Backend

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder


def check_model(store: Backend, embedder: Embedder) -> None:
    """Refuse to mix vectors of different models in one index.

    Raises:
        IndexMismatch: the index was built with another model; the message gives the rebuild command.
    """
    fingerprint = store.get_meta("embedding_fingerprint")
    if fingerprint is None or fingerprint == embedder.fingerprint:
        return
    roots = " ".join(json.loads(store.get_meta("roots", "[]") or "[]")) or "DIR"
    if store.get_meta("embedding_model") == embedder.model_id:  # same model, another runtime
        built, wanted = (runtime_name(f) for f in (fingerprint, embedder.fingerprint))
        raise IndexMismatch(
            f"the index at {store.path} was built with the {built} embedding runtime, not {wanted}; "
            f"use it without --embed-runtime, or rebuild it with: "
            f"rag ingest --rebuild --embed-runtime {wanted} --index {store.path} {roots}"
        )
    raise IndexMismatch(
        f"the index at {store.path} was built with embedding model {store.get_meta('embedding_model')} "
        f"(dimension {store.get_meta('embedding_dimension')}), not {embedder.model_id} "
        f"(dimension {embedder.dimension}); rebuild it with: "
        f"rag ingest --rebuild --embed-model {embedder.model_id} --index {store.path} {roots}"
    )


def runtime_name(fingerprint: str) -> str:
    """fp32 or int8: the embedding runtime a fingerprint names."""
    from ragcli.embedding.loader import INT8_SUFFIX

    return "int8" if fingerprint.endswith(INT8_SUFFIX) else "fp32"


def record_model(store: Backend, embedder: Embedder) -> None:
    store.bind_model(embedder.model_id, embedder.fingerprint, embedder.dimension)
    store.set_meta("embedding_model", embedder.model_id)
    store.set_meta("embedding_fingerprint", embedder.fingerprint)
    store.set_meta("embedding_dimension", embedder.dimension)


def vector_params(store: Backend, group: str) -> dict:
    """What the params file beside a group's vectors records."""
    settings = store.group(group)
    return {
        "model": store.get_meta("embedding_model"),
        "fingerprint": store.get_meta("embedding_fingerprint"),
        "chunking": asdict(settings),
    }
