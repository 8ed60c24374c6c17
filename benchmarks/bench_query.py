"""Query speed: cold `rag query` per mode, BM25 (our postings) vs rank-bm25, stdin throughput.

    python benchmarks/bench_query.py /work/shared/data/scifact/corpus.jsonl
    python benchmarks/bench_query.py --synthetic 100000

A corpus file is BEIR `corpus.jsonl` (`_id`, `title`, `text`), ingested with the real
default embedding model; its `queries.jsonl` beside it supplies queries when present.
`--synthetic N` makes N short documents of Zipf-distributed pseudo-words and, to save
time, ingests them with a fast deterministic embedder (pseudo-random unit vectors from
each text's hash) that records the real model's id and fingerprint, so a cold `rag query`
still loads and runs the real ONNX model for the query. The index is reused on later runs
(`--rebuild` to start over). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ragcli.embedding import load_embedder
from ragcli.ingest.pipeline import ingest_documents
from ragcli.store.local.database import Store
from ragcli.store.ownership import DATABASE_NAME
from ragcli.types import ChunkSettings, Document
from standin import (
    COMMON,
    HashVectors,
    vocabulary,
)  # benchmarks/standin.py: the script's folder is on sys.path

ONE_CHUNK = ChunkSettings("word", 400, 0)  # synthetic documents are short: one chunk each


def synthetic_corpus(count: int, seed: int = 7) -> tuple[list[Document], list[str]]:
    """`count` documents of 30-90 Zipf-distributed words, and 2,000 queries of 2-6 words.

    The top Zipf ranks are real common English words (stop words among them), the rest
    pronounceable pseudo-words, so term statistics after analysis resemble real text.
    """
    rng = np.random.default_rng(seed)
    words = np.array(COMMON + vocabulary(30_000, rng))
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    weights /= weights.sum()
    lengths = rng.integers(30, 91, size=count)
    drawn = rng.choice(len(words), size=int(lengths.sum()), p=weights)
    docs, start = [], 0
    for i, length in enumerate(lengths):
        docs.append(Document(f"doc{i:06d}", " ".join(words[drawn[start : start + length]]), "txt"))
        start += length
    queries = [
        " ".join(words[rng.choice(len(words), size=rng.integers(2, 7), p=weights)]) for _ in range(2000)
    ]
    return docs, queries


def beir_corpus(path: Path) -> tuple[list[Document], list[str]]:
    """A BEIR corpus and its queries (or the first sentences of documents when there are none)."""
    docs = []
    for line in path.open(encoding="utf-8"):
        row = json.loads(line)
        docs.append(Document(row["_id"], (row.get("title") or "") + "\n" + row["text"], "txt"))
    queries_file = path.with_name("queries.jsonl")
    if queries_file.is_file():
        queries = [json.loads(line)["text"] for line in queries_file.open(encoding="utf-8")]
    else:
        queries = [doc.text.split(".")[0][:120] for doc in docs[:2000]]
    return docs, queries


def build_index(args: argparse.Namespace, docs: list[Document], cache_dir: Path) -> None:
    real = load_embedder(None, cache_dir=cache_dir)  # also makes sure the ONNX export is cached
    if (args.index / DATABASE_NAME).is_file() and not args.rebuild:
        print(f"reusing the index at {args.index} (--rebuild to start over)")
        return
    if (args.index / DATABASE_NAME).is_file():  # --rebuild: only ever delete an index
        shutil.rmtree(args.index)
    if args.synthetic:
        embedder = HashVectors(real.model_id, real.fingerprint, real.dimension)
        print(
            "ingesting with the fast deterministic benchmark embedder (pseudo-random vectors; the index "
            "records the real model, which cold queries load)"
        )
    else:
        embedder = real
    started = time.perf_counter()
    report = ingest_documents(
        args.index,
        docs,
        embedder=embedder,
        group="medium",
        chunking=ONE_CHUNK if args.synthetic else None,
        batch_chunks=2048,
    )
    print(f"ingest: {report.chunks} chunks in {time.perf_counter() - started:.0f} s")


def cold_query(args: argparse.Namespace, mode: str, query: str, env: dict) -> float:
    """Median wall time of a new `rag query` process (after one warm-up run)."""
    command = [
        sys.executable,
        "-m",
        "ragcli",
        "query",
        query,
        "--mode",
        mode,
        "--json",
        "--index",
        str(args.index),
    ]
    times = []
    for attempt in range(args.repeat + 1):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        if attempt:  # the first run warms the disk cache
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def bm25_versus_rank_bm25(args: argparse.Namespace, queries: list[str]) -> None:
    """Per-query time of our BM25 (through the retriever) and of rank-bm25 on the same terms."""
    from rank_bm25 import BM25Okapi

    from ragcli.analysis import analyze
    from ragcli.retrieval.bm25 import BM25Retriever

    store = Store.open(args.index)
    try:
        tokens = [
            row[0].split()
            for row in store.db.execute("SELECT tokens FROM chunks WHERE group_name = 'medium' ORDER BY id")
        ]
        started = time.perf_counter()
        reference = BM25Okapi(tokens, k1=1.2, b=0.75)
        print(
            f"rank-bm25 index build: {time.perf_counter() - started:.1f} s for {len(tokens)} chunks (in RAM)"
        )
        retriever = BM25Retriever(store, "medium")
        sample = queries[: args.compare]
        retriever.search(sample[0], 10)
        ours = _per_query(lambda q: retriever.search(q, 10), sample)
        ref = _per_query(lambda q: np.argsort(reference.get_scores(analyze(q)))[::-1][:10], sample)
    finally:
        store.close()
    print(
        f"BM25 per query over {len(sample)} queries: ragcli {ours:.2f} ms, rank-bm25 {ref:.1f} ms "
        f"-> {ref / ours:.1f}x faster (mean)"
    )


def _per_query(search, queries: list[str]) -> float:
    started = time.perf_counter()
    for query in queries:
        search(query)
    return (time.perf_counter() - started) * 1000 / len(queries)


def stdin_batch(args: argparse.Namespace, mode: str, queries: list[str], env: dict) -> None:
    """1,000 queries through one `rag query -` process."""
    batch = "\n".join(queries[: args.batch]) + "\n"
    command = [
        sys.executable,
        "-m",
        "ragcli",
        "query",
        "-",
        "--mode",
        mode,
        "-k",
        "10",
        "--index",
        str(args.index),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, input=batch, text=True, check=True, capture_output=True)
    elapsed = time.perf_counter() - started
    answered = len({json.loads(line)["query"] for line in done.stdout.splitlines()})
    print(
        f"stdin batch {mode:<6}: {args.batch} queries in {elapsed:.1f} s -> {args.batch / elapsed:.0f} "
        f"queries/s (process start and model load included; {answered} distinct queries got hits)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("corpus", nargs="?", type=Path, help="BEIR corpus.jsonl")
    parser.add_argument("--synthetic", type=int, metavar="N", help="synthesise N documents instead")
    parser.add_argument("--index", type=Path, help="index directory (default under /tmp)")
    parser.add_argument(
        "--cache-dir", type=Path, default=Path("/tmp/ragcli-bench-query/cache"), help="ONNX export cache"
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the index even if it exists")
    parser.add_argument("--repeat", type=int, default=5, help="cold runs per mode (median)")
    parser.add_argument(
        "--compare", type=int, default=50, help="queries for the ragcli vs rank-bm25 BM25 timing"
    )
    parser.add_argument("--batch", type=int, default=1000, help="queries in the stdin batch")
    args = parser.parse_args()
    if bool(args.corpus) == bool(args.synthetic):
        parser.error("give a CORPUS.jsonl or --synthetic N")
    docs, queries = synthetic_corpus(args.synthetic) if args.synthetic else beir_corpus(args.corpus)
    name = f"synthetic-{args.synthetic}" if args.synthetic else args.corpus.parent.name
    args.index = args.index or Path("/tmp/ragcli-bench-query") / name
    build_index(args, docs, args.cache_dir)
    env = {**os.environ, "RAG_CACHE_DIR": str(args.cache_dir)}
    env.pop("RAG_EMBED_MODEL", None)
    for mode in ("bm25", "dense", "hybrid"):
        print(
            f"cold `rag query --mode {mode}`: {cold_query(args, mode, queries[0], env):.2f} s "
            f"(median of {args.repeat}, new process, warm disk cache)"
        )
    bm25_versus_rank_bm25(args, queries)
    while len(queries) < args.batch:
        queries = queries + queries
    for mode in ("bm25", "hybrid"):
        stdin_batch(args, mode, queries, env)


if __name__ == "__main__":
    main()
