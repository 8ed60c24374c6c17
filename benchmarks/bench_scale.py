"""Scale: build an index of N one-chunk documents (default 100,000; the issue's target is
1,000,000) and measure the store.

    python benchmarks/bench_scale.py --chunks 1000000 --index /tmp/scale-1m

Text: synthetic documents of 30-90 Zipf-distributed words (real common English words at
the top ranks, pronounceable pseudo-words below), generated as a stream.
Vectors: a stand-in embedder that records the real model's id, fingerprint and dimension
(so `rag query` embeds queries with the real model) and gives each chunk a mixture of two
real all-MiniLM-L6-v2 vectors of SciFact texts plus a little noise, chosen by the text's
hash: the nearest-neighbour structure of real embeddings (what ANN recall depends on)
at no model cost. The base vectors are embedded once (2,000 SciFact documents) and cached.

Printed: ingest throughput and peak RSS (of this process, right after ingest), size on
disk, cold (`rag query` in a new process; page cache warm) and warm (one `Searcher`)
query latency for bm25 / dense / hybrid with the load average after each, where a warm
hybrid query's time goes (median ms per stage, from the `ragcli.stages` records `rag -v`
shows), recall@10 of the approximate vector index against exact search on 200 queries
(real MiniLM query vectors), and the time to delete 1% of the documents (BM25, SQLite and
the vector file). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterator

import numpy as np

from ragcli.types import ChunkSettings, Document
from standin import COMMON  # benchmarks/standin.py: the script's folder is on sys.path
from standin import vocabulary as pseudo_words

ONE_CHUNK = ChunkSettings("word", 400, 0)


def words(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """The vocabulary (common words, then 30,000 pseudo-words) and its Zipf weights."""
    rng = np.random.default_rng(seed)
    vocabulary = np.array(COMMON + pseudo_words(30_000, rng))
    weights = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.05
    return vocabulary, weights / weights.sum()


def documents(count: int, seed: int = 7, block: int = 10_000) -> Iterator[Document]:
    """`count` synthetic documents, generated block by block (memory stays flat)."""
    vocabulary, weights = words(seed)
    rng = np.random.default_rng(seed + 1)
    for start in range(0, count, block):
        lengths = rng.integers(30, 91, size=min(block, count - start))
        drawn = vocabulary[rng.choice(len(vocabulary), size=int(lengths.sum()), p=weights)]
        offset = 0
        for i, length in enumerate(lengths):
            yield Document(f"doc{start + i:07d}", " ".join(drawn[offset : offset + length]), "txt")
            offset += length


def queries(count: int, seed: int = 11) -> list[str]:
    vocabulary, weights = words()
    rng = np.random.default_rng(seed)
    return [
        " ".join(vocabulary[rng.choice(len(vocabulary), size=rng.integers(2, 7), p=weights)])
        for _ in range(count)
    ]


class MixtureVectors:
    """Stand-in embedder: base[i] + w * base[j] + noise, normalised; i, j, w from the text's hash."""

    def __init__(self, real, base: np.ndarray) -> None:
        self.model_id, self.fingerprint, self.dimension = real.model_id, real.fingerprint, real.dimension
        self.max_tokens = 512
        self.base = base
        self.noise = np.random.default_rng(5).standard_normal((4096, base.shape[1])).astype(np.float32)

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        keys = np.array(
            [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts],
            dtype=np.uint64,
        )
        first = (keys % len(self.base)).astype(np.int64)
        second = ((keys >> np.uint64(20)) % len(self.base)).astype(np.int64)
        weight = (((keys >> np.uint64(40)) % 1000).astype(np.float32) / 1000 * 0.4 + 0.2)[:, None]
        noise = self.noise[((keys >> np.uint64(50)) % 4096).astype(np.int64)]
        vectors = self.base[first] + weight * self.base[second] + 0.02 * noise
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError("benchmark documents are split by words")


def base_vectors(real, work: Path, corpus: Path, count: int = 2000) -> np.ndarray:
    """Real model vectors of the first `count` SciFact documents (cached in `work`)."""
    cached = work / f"base-{count}.npy"
    if cached.is_file():
        return np.load(cached)
    texts = []
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            texts.append(f"{row.get('title') or ''}\n{row['text']}")
            if len(texts) == count:
                break
    started = time.perf_counter()
    vectors = np.asarray(real.embed(texts, batch_size=32), dtype=np.float32)
    print(f"embedded {len(texts)} base texts with {real.model_id} in {time.perf_counter() - started:.0f} s")
    work.mkdir(parents=True, exist_ok=True)
    np.save(cached, vectors)
    return vectors


def peak_rss_kib() -> int:
    """This process's peak resident set (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


class Model:
    """The real model's identity, for a process that must not load the model itself."""

    def __init__(self, model_id: str, fingerprint: str, dimension: int) -> None:
        self.model_id, self.fingerprint, self.dimension = model_id, fingerprint, dimension


def build(args) -> None:
    """Ingest in this process (started by `main` with --phase ingest: its RSS is ingest's alone)."""
    from ragcli.ingest.pipeline import ingest_documents

    identity = json.loads((args.work / "model.json").read_text())
    embedder = MixtureVectors(Model(**identity), np.load(args.work / "base-2000.npy"))
    started = time.perf_counter()
    report = ingest_documents(
        args.index,
        documents(args.chunks),
        embedder=embedder,
        group="medium",
        chunking=ONE_CHUNK,
        batch_chunks=args.batch,
    )
    seconds = time.perf_counter() - started
    peak = peak_rss_kib()
    print(
        f"ingest: {report.chunks} chunks in {seconds:.0f} s = {report.chunks / seconds:.0f} chunks/s; "
        f"peak RSS {peak / 1024:.0f} MiB = {peak * 1024 / 1e9:.2f} GB (the ingesting process)",
        flush=True,
    )


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes (timings depend on it)."""
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


# The warm hybrid query's stages (`ragcli.stages`, the timings `rag -v` logs), as the benchmark
# prints them: each leaf once (the two vector searches, first pass and feedback, summed), then
# the stages that only contain leaves. Leaves do not overlap, so the rest of the query's time
# is spent outside every stage.
HYBRID_LEAVES = (
    ("embed query", "query embedding"),
    ("vector search", "vector index search (IVF probe), both passes"),
    ("vector owners", "vector ids to chunk ids (SQLite), both passes"),
    ("feedback vector", "feedback: the best fused hit's stored vector"),
    ("read chunks (dense)", "chunk reads for dense hits"),
    ("bm25 score", "BM25 scoring"),
    ("read chunks (bm25)", "chunk reads for BM25 hits"),
    ("fuse (adaptive, first pass)", "fusion, first pass"),
    ("fuse (adaptive, second pass)", "fusion, second pass"),
)
HYBRID_CONTAINERS = ("bm25 retrieve", "dense retrieve", "dense feedback")


class StageClock(logging.Handler):
    """Milliseconds per `ragcli.stages` stage of one query (name and detail; repeats summed).

    Reads the records the search pipeline already logs (`stage NAME: SECONDS s (DETAIL)`)
    from their arguments, without formatting them.
    """

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.query: dict[str, float] = defaultdict(float)

    def emit(self, record: logging.LogRecord) -> None:
        name, seconds, detail = record.args
        self.query[name + detail] += seconds * 1000

    def __enter__(self) -> "StageClock":
        logger = logging.getLogger("ragcli.stages")
        self._saved = logger.level, logger.propagate
        logger.setLevel(logging.INFO)
        logger.propagate = False
        logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logger = logging.getLogger("ragcli.stages")
        logger.removeHandler(self)
        logger.setLevel(self._saved[0])
        logger.propagate = self._saved[1]


def warm(args, texts: list[str]) -> None:
    from ragcli.config import load_settings
    from ragcli.retrieval.search import QueryOptions, Searcher

    settings = load_settings(index=args.index)
    with Searcher(args.index, settings=settings) as searcher:
        for mode in ("bm25", "dense", "hybrid"):
            options = QueryOptions(mode=mode, top_k=10)
            searcher.search(texts[0], options)  # loads the model, maps the files
            times, stages = [], []
            with StageClock() if mode == "hybrid" else contextlib.nullcontext() as clock:
                for text in texts[1 : args.warm + 1]:
                    if clock is not None:
                        clock.query = defaultdict(float)
                    started = time.perf_counter()
                    searcher.search(text, options)
                    times.append((time.perf_counter() - started) * 1000)
                    if clock is not None:
                        stages.append(clock.query)
            print(
                f"warm {mode:<6}: p50 {percentile(times, 50):6.1f} ms, p95 {percentile(times, 95):6.1f} ms "
                f"({len(times)} queries, one Searcher; {load_average()})"
            )
    print_breakdown(times, stages)


def print_breakdown(times: list[float], stages: list[dict[str, float]]) -> None:
    """The warm hybrid query's time per stage over the same queries: the median, and the mean
    with its share of the mean query (means add up to the whole; medians of parts need not,
    since a busy machine delays a different stage of each query)."""
    print(
        f"warm hybrid, where the time goes ({len(times)} queries; ms median / mean, share of the mean; "
        f"whole query {statistics.median(times):.1f} / {statistics.fmean(times):.1f} ms):"
    )
    leaves = [key for key, _ in HYBRID_LEAVES]
    rest = [elapsed - sum(query.get(key, 0.0) for key in leaves) for elapsed, query in zip(times, stages)]
    rows = [(label, [query.get(key, 0.0) for query in stages]) for key, label in HYBRID_LEAVES]
    rows.append(("outside these stages (group, coverage, hits)", rest))
    rows += [
        (f"({key}: holds some of the above)", [q.get(key, 0.0) for q in stages]) for key in HYBRID_CONTAINERS
    ]
    for label, values in rows:
        mean = statistics.fmean(values)
        print(
            f"  {label:<48} {statistics.median(values):6.2f} / {mean:6.2f} ms  "
            f"{mean / statistics.fmean(times):4.0%}"
        )
    unplaced = sorted({key for query in stages for key in query} - set(leaves) - set(HYBRID_CONTAINERS))
    if unplaced:
        print(f"  stages this breakdown does not place: {', '.join(unplaced)}")


def cold(args, texts: list[str]) -> None:
    for mode in ("bm25", "dense", "hybrid"):
        times = []
        for attempt, text in enumerate(texts[: args.cold + 1]):
            started = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ragcli",
                    "query",
                    text,
                    "--mode",
                    mode,
                    "--json",
                    "--index",
                    str(args.index),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            if attempt:  # the first run warms the page cache
                times.append(time.perf_counter() - started)
        print(
            f"cold {mode:<6}: median {statistics.median(times):.2f} s, max {max(times):.2f} s "
            f"(new `rag query` process each, {len(times)} runs; {load_average()})"
        )


def recall(args, real) -> None:
    """recall@10 of the group's vector index against exact inner product over the same vectors,
    for 200 real SciFact queries embedded with the real model (the documents' vectors are
    mixtures of SciFact vectors, so these queries meet them as real queries meet real text)."""
    from ragcli.store.local.database import Store

    lines = args.corpus.with_name("queries.jsonl").read_text(encoding="utf-8").splitlines()[:200]
    vectors = np.asarray(real.embed([json.loads(line)["text"] for line in lines]), dtype=np.float32)
    store = Store.open(args.index)
    try:
        index = store.vector_index("medium")
        kind = index.describe()
        started = time.perf_counter()
        _, got = index.search(vectors, 10)
        approximate_ms = (time.perf_counter() - started) * 1000 / len(vectors)
        ids = store.group_embedding_ids("medium")
        best_scores = np.full((len(vectors), 10), -np.inf, dtype=np.float32)
        best_ids = np.zeros((len(vectors), 10), dtype=np.int64)
        for batch_ids, batch in _batches(store, ids, index.dimension):
            scores = vectors @ batch.T
            scores = np.concatenate([best_scores, scores], axis=1)
            every = np.broadcast_to(batch_ids, (len(vectors), len(batch_ids)))
            candidates = np.concatenate([best_ids, every], axis=1)
            top = np.argsort(-scores, axis=1)[:, :10]
            best_scores = np.take_along_axis(scores, top, axis=1)
            best_ids = np.take_along_axis(candidates, top, axis=1)
    finally:
        store.close()
    value = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got, best_ids)])
    print(
        f"vector index {kind}: recall@10 {value:.3f} against exact search on {len(vectors)} queries "
        f"({approximate_ms:.2f} ms a query, batched)"
    )


def _batches(store, ids: np.ndarray, dimension: int, size: int = 50_000):
    for start in range(0, len(ids), size):
        parts = list(store.vectors_for(ids[start : start + size], dimension))
        yield np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def delete_few(args) -> None:
    """Time deleting 1, 1, 1, 10 and 40 documents, each batch in its own transaction (BM25 and SQLite)."""
    from ragcli.store.local.database import Store

    store = Store.open(args.index)
    try:
        ids = [row[0] for row in store.db.execute("SELECT id FROM documents ORDER BY id DESC LIMIT 53")]
        for count in (1, 1, 1, 10, 40):
            part, ids = ids[:count], ids[count:]
            started = time.perf_counter()
            with store.transaction():
                store.delete_documents(part)
            elapsed = (time.perf_counter() - started) * 1000
            print(f"delete {count} document(s) in one transaction: {elapsed:.1f} ms")
    finally:
        store.close()


def delete_share(args, share: float = 0.01) -> None:
    from ragcli.ingest.index_model import vector_params
    from ragcli.store.local.database import Store

    store = Store.open(args.index)
    try:
        all_ids = np.array([row[0] for row in store.db.execute("SELECT id FROM documents")], dtype=np.int64)
        size = max(1, int(len(all_ids) * share))
        doomed = np.random.default_rng(3).choice(all_ids, size=size, replace=False)
        started = time.perf_counter()
        with store.transaction():
            store.delete_documents(int(i) for i in doomed)
        database = time.perf_counter() - started
        store.sync_vectors("medium", vector_params(store, "medium"))
        vectors = time.perf_counter() - started - database
        with store.transaction():
            store.delete_unused_embeddings()
        total = time.perf_counter() - started
    finally:
        store.close()
    print(
        f"delete {len(doomed)} documents ({share:.0%}): {total:.1f} s (documents, chunks and BM25 "
        f"{database:.1f} s, vector file {vectors:.1f} s, unused embeddings "
        f"{total - database - vectors:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--index", type=Path, default=Path("/tmp/ragcli-bench-scale"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragcli-bench-scale-work"))
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/data/scifact/corpus.jsonl"))
    parser.add_argument("--batch", type=int, default=4096, help="chunks per ingest transaction")
    parser.add_argument("--warm", type=int, default=100, help="warm queries per mode")
    parser.add_argument("--cold", type=int, default=3, help="cold processes per mode")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--skip-delete", action="store_true")
    parser.add_argument(
        "--only-delete-few",
        action="store_true",
        help="only time deleting a few documents from an existing index",
    )
    parser.add_argument("--phase", choices=["all", "ingest"], default="all", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only_delete_few:
        delete_few(args)
        return
    if args.phase == "ingest":
        build(args)
        return

    from ragcli.config import load_settings
    from ragcli.embedding import load_embedder
    from ragcli.store.ownership import DATABASE_NAME

    real = load_embedder(None, cache_dir=load_settings().cache_dir)
    base_vectors(real, args.work, args.corpus)
    (args.work / "model.json").write_text(
        json.dumps({"model_id": real.model_id, "fingerprint": real.fingerprint, "dimension": real.dimension})
    )
    if (args.index / DATABASE_NAME).is_file() and args.rebuild:
        shutil.rmtree(args.index)
    if not (args.index / DATABASE_NAME).is_file():
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--phase",
                "ingest",
                "--chunks",
                str(args.chunks),
                "--index",
                str(args.index),
                "--work",
                str(args.work),
                "--batch",
                str(args.batch),
            ],
            check=True,
        )
    else:
        print(f"reusing the index at {args.index} (--rebuild to start over)")
    params = json.loads((args.index / "vectors" / "medium.json").read_text())
    total, vectors = disk_mb(args.index), disk_mb(args.index / "vectors")
    print(
        f"size on disk: {total:.0f} MB (database {total - vectors:.0f} MB, vectors {vectors:.0f} MB: "
        f"{params['index_type']}, {params['count']} vectors)"
    )
    texts = queries(max(args.warm + 1, 201))
    warm(args, texts)
    cold(args, texts)
    recall(args, real)
    if not args.skip_delete:
        delete_few(args)
        delete_share(args)


if __name__ == "__main__":
    main()
