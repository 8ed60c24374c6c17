"""Ingest throughput: the local store against Milvus Lite, on the same documents and chunks.

    python benchmarks/bench_milvus.py /work/shared/data/scifact/corpus.jsonl --limit 500

The first `--limit` documents of a BEIR ``corpus.jsonl`` are ingested into a fresh local
index and a fresh Milvus Lite file, in one process, twice:

1. with the real default embedding model (what a user's ingest costs: embedding dominates);
2. replaying the vectors of pass 1 (the store's own cost: reading, splitting, BM25 terms,
   writes), so the two stores are compared with embedding taken out.

Each pass prints documents/s and chunks/s per store and the Milvus/local ratio. Needs the
`[milvus]` extra. Timings are printed, never asserted.
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
from ragcli.ingest.pipeline import ingest_documents


class Replay:
    """The real embedder's identity with the vectors it gave before (text -> vector)."""

    def __init__(self, real) -> None:
        self.real = real
        self.vectors: dict[str, np.ndarray] = {}
        self.replaying = False

    def __getattr__(self, name):
        return getattr(self.real, name)

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        if self.replaying:
            return np.stack([self.vectors[text] for text in texts])
        vectors = np.asarray(self.real.embed(texts), dtype=np.float32)
        self.vectors.update(zip(texts, vectors))
        return vectors


def timed_ingest(index: Path, documents, embedder, store: str | None) -> tuple[float, int]:
    started = time.perf_counter()
    report = ingest_documents(index, documents, embedder=embedder, store=store)
    return time.perf_counter() - started, report.chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a BEIR corpus.jsonl")
    parser.add_argument("--limit", type=int, default=500, help="documents to ingest (default 500)")
    args = parser.parse_args()
    documents = list(itertools.islice(read_corpus(args.corpus), args.limit))
    embedder = Replay(load_embedder(None, cache_dir=load_settings().cache_dir))
    embedder.embed(["warm up"])
    work = Path(tempfile.mkdtemp(prefix="bench-milvus-"))
    try:
        for label in ("real embedding", "replayed vectors (store cost only)"):
            results = {}
            for name, store in (("local", None), ("milvus-lite", str(work / f"{label[:4]}.db"))):
                seconds, chunks = timed_ingest(work / f"{name}-{label[:4]}", documents, embedder, store)
                results[name] = (seconds, chunks)
                print(
                    f"{label:36} {name:12} {len(documents)} docs, {chunks} chunks in {seconds:6.1f} s: "
                    f"{len(documents) / seconds:7.1f} docs/s, {chunks / seconds:7.1f} chunks/s",
                    flush=True,
                )
            ratio = results["local"][0] / results["milvus-lite"][0]
            print(f"{label:36} milvus-lite / local throughput: {ratio:.2f}x", flush=True)
            embedder.replaying = True
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
