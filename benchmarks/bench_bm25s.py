"""Warm BM25 per query: ragcli's postings engine against bm25s, in one process, same chunks.

    python benchmarks/bench_bm25s.py /work/shared/data/scifact [--index /tmp/x] [--rounds 3]

The corpus is ingested the way `rag eval` does (BEIR `title` + newline + `text`, the
"medium" chunk group, the real model's tokenizer for the windows) with stand-in vectors
(BM25 needs no real ones); bm25s then
indexes exactly the chunk texts ragcli stored, with its own English stop words and the
same Snowball stemmer (PyStemmer). Each engine tokenises its queries inside the timing.

Printed, per query (ms, mean over all queries, best of --rounds passes after a warm-up pass):
- single: one query per call, top 10. bm25s: `tokenize` + `retrieve` (ids and scores);
  ragcli: `analyze` + `PostingsReader.top_k` (ids and scores, one snapshot per query), and
  `BM25Retriever.search` (Hits: chunk text, path and metadata, which bm25s does not return;
  warm, chunks kept between queries by `ChunkCache`, and cold, every chunk read from SQLite);
- batched: all queries in one call (bm25s: one `tokenize` + `retrieve` of the list, one
  thread; ragcli: `top_k` of each in one snapshot, and `BM25Retriever.search_many`, Hits);
- `rag query -` end to end: the installed `rag` reading all queries from stdin (JSON lines
  with text, process start and imports included), in queries per second;
- bm25s twice: with its own tokenizer (a longer stop list: fewer, shorter postings per
  query) and fed ragcli's analysed terms (the same scoring work as ragcli).
Timings are printed, never asserted; on a shared machine say "measured under load".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).parent))

from standin import HashVectors  # noqa: E402

from ragcli.evaluation.datasets import read_corpus  # noqa: E402
from ragcli.ingest.pipeline import ingest_documents  # noqa: E402
from ragcli.analysis import analyze  # noqa: E402
from ragcli.retrieval.bm25 import BM25Retriever  # noqa: E402
from ragcli.store import DATABASE_NAME, Store  # noqa: E402
from ragcli.store.chunkcache import ChunkCache  # noqa: E402
from ragcli.store.postings import PostingsReader  # noqa: E402


def best_of(rounds: int, run, count: int) -> float:
    """Best mean ms per query over `rounds` timed passes (after one warm-up pass)."""
    run()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000 / count)
    return min(times)


def print_stdin(index: Path, queries: list[str], rounds: int) -> None:
    """`rag query - --mode bm25 --jsonl` (the installed `rag`) fed every query on stdin, best of `rounds`."""
    import shutil
    import subprocess

    rag = shutil.which("rag")
    if rag is None:
        print("rag stdin end-to-end: no `rag` on PATH")
        return
    text = "\n".join(" ".join(query.split()) for query in queries) + "\n"
    command = [rag, "query", "-", "--mode", "bm25", "-k", "10", "--jsonl", "--index", str(index)]
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        done = subprocess.run(command, input=text, capture_output=True, text=True, check=True)
        best = min(best, time.perf_counter() - started)
    lines = len(done.stdout.splitlines())
    print(
        f"{'rag query - (stdin, end to end)':<36} {len(queries) / best:.0f} queries/s "
        f"({best:.2f} s for {len(queries)} queries, {lines} JSON lines, process start included)"
    )


def build_index(index: Path, dataset: Path) -> None:
    """Ingest the corpus as `rag eval` chunks it (the real tokenizer), with stand-in vectors."""
    from ragcli.config import load_settings
    from ragcli.embedding import load_embedder

    real = load_embedder(None, cache_dir=load_settings().cache_dir)
    embedder = HashVectors("standin", "standin-v1", 32)
    embedder.token_offsets = real.token_offsets  # chunk windows exactly as `rag eval` makes them
    started = time.perf_counter()
    ingest_documents(index, read_corpus(dataset / "corpus.jsonl"), embedder=embedder, group="medium")
    print(f"ragcli ingest (stand-in vectors): {time.perf_counter() - started:.1f} s")


def bm25s_runs(store: Store, queries: list[str]) -> dict[str, Callable[[], None]]:
    """bm25s with its own tokenizer, and fed ragcli's analysed terms (the same scoring work)."""
    import bm25s
    import Stemmer

    texts = [
        row[0] for row in store.db.execute("SELECT text FROM chunks WHERE group_name = 'medium' ORDER BY id")
    ]
    print(f"{len(texts)} chunks, {len(queries)} queries")
    stemmer = Stemmer.Stemmer("english")
    own = bm25s.BM25(k1=1.2, b=0.75)
    own.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    same = bm25s.BM25(k1=1.2, b=0.75)
    rows = store.db.execute("SELECT tokens FROM chunks WHERE group_name = 'medium' ORDER BY id")
    same.index([tokens.split() for (tokens,) in rows], show_progress=False)

    def own_single():
        for query in queries:
            tokens = bm25s.tokenize(query, stopwords="en", stemmer=stemmer, show_progress=False)
            own.retrieve(tokens, k=10, show_progress=False, n_threads=1)

    def own_batch():
        tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
        own.retrieve(tokens, k=10, show_progress=False, n_threads=1)

    def same_single():
        for query in queries:
            same.retrieve([analyze(query)], k=10, show_progress=False, n_threads=1)

    def same_batch():
        same.retrieve([analyze(query) for query in queries], k=10, show_progress=False, n_threads=1)

    return {
        "single own": own_single,
        "single same": same_single,
        "batch own": own_batch,
        "batch same": same_batch,
    }


def ragcli_runs(store: Store, queries: list[str]) -> dict[str, Callable[[], None]]:
    """ragcli's engine (ids and scores) and its retriever (Hits with text), single and batched."""
    ours = BM25Retriever(store, "medium")
    reader = PostingsReader()

    def hits_single():
        for query in queries:
            ours.search(query, 10)

    def hits_single_cold():
        for query in queries:
            ours._lexical._chunks = ChunkCache()  # every hit's chunk read from SQLite again
            ours.search(query, 10)

    def hits_batch():
        ours.search_many(queries, 10)

    def ids_single():
        for query in queries:
            with store.snapshot():
                reader.top_k(store.db, "medium", analyze(query), 10)

    def ids_batch():
        with store.snapshot():
            for query in queries:
                reader.top_k(store.db, "medium", analyze(query), 10)

    return {
        "ids single": ids_single,
        "hits single": hits_single,
        "hits single cold": hits_single_cold,
        "ids batch": ids_batch,
        "hits batch": hits_batch,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl and queries.jsonl")
    parser.add_argument("--index", type=Path, default=Path("/tmp/ragcli-bench-bm25s"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    if not (args.index / DATABASE_NAME).is_file():
        build_index(args.index, args.dataset)
    queries = [json.loads(line)["text"] for line in (args.dataset / "queries.jsonl").open(encoding="utf-8")]
    store = Store.open(args.index)
    theirs, ours = bm25s_runs(store, queries), ragcli_runs(store, queries)
    rows = [
        ("bm25s single, ids (own tokenizer)", theirs["single own"]),
        ("bm25s single, ids (ragcli terms)", theirs["single same"]),
        ("ragcli single, ids + scores", ours["ids single"]),
        ("ragcli single, hits + text", ours["hits single"]),
        ("ragcli single, hits, cold chunks", ours["hits single cold"]),
        ("bm25s batched, ids (own tokenizer)", theirs["batch own"]),
        ("bm25s batched, ids (ragcli terms)", theirs["batch same"]),
        ("ragcli batched, ids + scores", ours["ids batch"]),
        ("ragcli batched, hits + text", ours["hits batch"]),
    ]
    for name, run in rows:
        print(f"{name:<36} {best_of(args.rounds, run, len(queries)):.3f} ms/query", flush=True)
    print_stdin(args.index, queries, args.rounds)
    store.close()


if __name__ == "__main__":
    main()
