"""Ingest throughput: the local store against Milvus Lite, on the same documents and chunks.

    python benchmarks/bench_milvus.py /work/shared/data/scifact/corpus.jsonl --limit 500
    python benchmarks/bench_milvus.py /work/shared/data/scifact/corpus.jsonl \\
        --seed-from LOCAL_INDEX --store /tmp/scifact.db --index /tmp/scifact-milvus

The first `--limit` documents of a BEIR ``corpus.jsonl`` are ingested into a fresh local
index and a fresh Milvus Lite file, in one process, twice:

1. with the real default embedding model (what a user's ingest costs: embedding dominates);
2. replaying the vectors of pass 1 (the store's own cost: reading, splitting, BM25 terms,
   writes), so the two stores are compared with embedding taken out.

Each pass prints documents/s and chunks/s per store and the Milvus/local ratio. Needs the
`[milvus]` extra. Timings are printed, never asserted.

With `--seed-from`, the whole corpus is instead ingested once into `--index` on `--store`,
embedding with the vectors a local index of the same corpus already holds (same model, same
chunking: identical chunk texts, so identical vectors; anything missing is embedded). That
builds the Milvus side of the parity figures (`rag eval retrieval DATASET --index INDEX`)
without embedding the corpus a second time.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from ragcli.config import load_settings
from ragcli.embedding import load_embedder
from ragcli.evaluation.datasets import read_corpus
from ragcli.ingest.batching import span_hash
from ragcli.ingest.pipeline import ingest_documents


class Replay:
    """The real embedder's identity with the vectors it gave before (text hash -> vector)."""

    def __init__(self, real, vectors: dict[str, np.ndarray] | None = None) -> None:
        self.real = real
        self.vectors: dict[str, np.ndarray] = vectors or {}
        self.replaying = bool(vectors)

    def __getattr__(self, name):
        return getattr(self.real, name)

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        hashes = [span_hash(text) for text in texts]
        if self.replaying and all(h in self.vectors for h in hashes):
            return np.stack([self.vectors[h] for h in hashes])
        vectors = np.asarray(self.real.embed(texts), dtype=np.float32)
        self.vectors.update(zip(hashes, vectors))
        return vectors


def stored_vectors(index: Path) -> dict[str, np.ndarray]:
    """Chunk text hash -> vector, from a local index."""
    from ragcli.store.local.database import Store

    store = Store.open(index)
    try:
        dimension = store.dimension()
        rows = store.db.execute("SELECT hash, vector FROM embeddings").fetchall()
    finally:
        store.close()
    return {h: np.frombuffer(blob, dtype=np.float32).reshape(dimension) for h, blob in rows}


def seed(args: argparse.Namespace, real) -> None:
    """Ingest the whole corpus into `args.index` on `args.store`, replaying stored vectors."""
    embedder = Replay(real, stored_vectors(args.seed_from))
    stored = len(embedder.vectors)
    started = time.perf_counter()
    report = ingest_documents(args.index, read_corpus(args.corpus), embedder=embedder, store=args.store)
    seconds = time.perf_counter() - started
    print(
        f"{report.added} documents, {report.chunks} chunks into {args.store} in {seconds:.1f} s "
        f"({report.embedded} chunk texts handed to the embedder, {len(embedder.vectors) - stored} of them "
        "not in the local index and so really embedded)"
    )


def timed_ingest(index: Path, documents, embedder, store: str | None) -> tuple[float, int]:
    started = time.perf_counter()
    report = ingest_documents(index, documents, embedder=embedder, store=store)
    return time.perf_counter() - started, report.chunks


def compare(documents, embedder: Replay, work: Path) -> None:
    """Both stores, first embedding for real, then replaying the vectors."""
    for label in ("real embedding", "replayed vectors (store cost only)"):
        results = {}
        for name, store in (("local", None), ("milvus-lite", str(work / f"{label[:4]}.db"))):
            seconds, chunks = timed_ingest(work / f"{name}-{label[:4]}", documents, embedder, store)
            results[name] = seconds
            print(
                f"{label:36} {name:12} {len(documents)} docs, {chunks} chunks in {seconds:6.1f} s: "
                f"{len(documents) / seconds:7.1f} docs/s, {chunks / seconds:7.1f} chunks/s",
                flush=True,
            )
        print(f"{label:36} milvus-lite / local throughput: {results['local'] / results['milvus-lite']:.2f}x")
        embedder.replaying = True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a BEIR corpus.jsonl")
    parser.add_argument("--limit", type=int, default=500, help="documents to ingest (default 500)")
    parser.add_argument("--seed-from", type=Path, help="a local index of the corpus whose vectors to reuse")
    parser.add_argument("--store", help="with --seed-from: the Milvus store to fill")
    parser.add_argument("--index", type=Path, help="with --seed-from: the index folder to create")
    args = parser.parse_args()
    real = load_embedder(None, cache_dir=load_settings().cache_dir)
    if args.seed_from:
        seed(args, real)
        return
    documents = list(itertools.islice(read_corpus(args.corpus), args.limit))
    embedder = Replay(real)
    embedder.embed(["warm up"])
    work = Path(tempfile.mkdtemp(prefix="bench-milvus-"))
    try:
        compare(documents, embedder, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
