"""The dedicated index an evaluation set's corpus is ingested into, and keeping it current.

Each (dataset folder, chunk group settings, embedding model) gets its own index under the
cache dir, so evaluating never touches the user's own index and a second run reuses the
first one's work: `ingest_documents` skips documents whose text is unchanged, so an
unchanged corpus embeds nothing.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager

from ragcli.choices import DEFAULT_GROUP
from ragcli.config import Settings
from ragcli.evaluation.datasets import read_corpus
from ragcli.ingest.splitting import PRESETS
from ragcli.store.directory import read_index_meta

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder
    from ragcli.types import Progress


def dataset_index_path(
    dataset: Path, *, settings: Settings, group: str = DEFAULT_GROUP, store: str | None = None
) -> Path:
    """Where the corpus of `dataset` is indexed: ``cache_dir/eval/<name>-<hash>``.

    The short hash covers the dataset's absolute path, the group's chunk settings, the
    embedding model and the store (when not local), so changing any of them builds a
    separate index instead of churning one.
    """
    from ragcli.store.interface import normalise_uri

    dataset = Path(dataset).expanduser().resolve()
    chunking = PRESETS.get(group, PRESETS[DEFAULT_GROUP])
    parts = [str(dataset), group, asdict(chunking), settings.embed_model or "default"]
    uri = normalise_uri(store) if store else "local"
    key = json.dumps(parts if uri == "local" else [*parts, uri])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return settings.cache_dir / "eval" / f"{dataset.name}-{digest}"


def count_lines(path: Path) -> int:
    """Non-empty lines of a JSON Lines file (the progress bar's total)."""
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def prepare_index(
    corpus: Path,
    index: Path,
    *,
    settings: Settings,
    group: str = DEFAULT_GROUP,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
    store: str | None = None,
):
    """Ingest a BEIR corpus into `index`, adding or updating only what changed.

    Args:
        corpus: the ``corpus.jsonl`` file, or a folder of documents.
        index: the index directory (created when missing).
        settings: model choice and cache dir.
        group: the chunk group to fill (its preset chunking unless the index has settings).
        embedder: the embedding model; default: the index's own, else the flag/env/default one.
        progress: receives ``start(total)`` and ``advance(doc_id, status)``.
        store: where a new index keeps its content (see `ragcli.ingest.pipeline.ingest`).

    Returns:
        The `IngestReport`.

    Raises:
        IndexMismatch: the index was built with another embedding model.
    """
    from ragcli.ingest.pipeline import ingest, ingest_documents

    if embedder is None:
        from ragcli.generation.chooser import embedder_for

        embedder = embedder_for(settings, read_index_meta(index, "embedding_model"))
    if corpus.is_dir():  # a folder of documents: read as `rag ingest` reads it
        return ingest(index, [corpus], embedder=embedder, group=group, progress=progress, store=store)
    if progress is not None:
        progress.start(count_lines(corpus))
    return ingest_documents(
        index, read_corpus(corpus), embedder=embedder, group=group, progress=progress, store=store
    )


def stage(progress: Callable[[str], ContextManager[Any]] | None, description: str) -> ContextManager[Any]:
    """The progress receiver for one stage, or None when progress is not shown."""
    return progress(description) if progress is not None else nullcontext(None)


def resolve_index(
    corpus: Path | None,
    source: Path,
    *,
    settings: Settings,
    index: Path | None = None,
    group: str | None = None,
    progress: Callable[[str], ContextManager[Any]] | None = None,
    store: str | None = None,
) -> tuple[Path, dict[str, Any]]:
    """The index to evaluate on, brought up to date with the dataset's corpus when it has one.

    Args:
        corpus: the dataset's ``corpus.jsonl``; None to use an existing index as it is.
        source: the dataset folder or file (names the dedicated index).
        settings: model choice, cache dir and the current index (`settings.index`).
        index: an explicit index directory (``--index``); default: the dedicated index for a
            corpus, else `settings.index`.
        group: the chunk group (default "medium").
        progress: opens a progress receiver for a described stage.
        store: where the dataset's own index keeps its content (None: locally).

    Returns:
        The index path and what the ingest did (empty when there was no corpus).
    """
    if corpus is None:
        return (index or settings.index), {}
    group = group or DEFAULT_GROUP
    target = index or dataset_index_path(source, settings=settings, group=group, store=store)
    with stage(progress, "indexing") as bar:
        report = prepare_index(corpus, target, settings=settings, group=group, progress=bar, store=store)
    return target, {
        key: getattr(report, key)
        for key in ("added", "updated", "unchanged", "removed", "embedded", "chunks", "seconds")
    }
