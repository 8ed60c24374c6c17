"""Warm BM25 per query: ragcli's postings engine against bm25s, in one process, same chunks.

    python benchmarks/bench_bm25s.py /work/shared/data/scifact [--index /tmp/x] [--rounds 3]

The corpus is ingested the way `rag eval` does (BEIR `title` + newline + `text`, the
"medium" chunk group, the real model's tokenizer for the windows) with stand-in vectors
(BM25 needs no real ones); bm25s then
indexes exactly the chunk texts ragcli stored, with its own English stop words and the
same Snowball stemmer (PyStemmer). Each engine tokenises its queries inside the timing.

Printed, per query (ms, mean over all queries, best of --rounds passes after a warm-up pass):
- single: one query per call, top 10. bm25s: `tokenize` + `retrieve` (ids and scores);
  ragcli: `analyze` + `PostingsReader.top_k` (ids and scores), and `BM25Retriever.search`
  (Hits: chunk text and metadata read from SQLite, which bm25s does not do);
- batched: all queries in one call (bm25s: one `tokenize` + `retrieve` of the list, one
  thread; ragcli: `BM25Retriever.search_many`, Hits with text);
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

sys.path.insert(0, str(Path(__file__).parent))

from standin import HashVectors  # noqa: E402

from ragcli.evaluation.datasets import read_corpus  # noqa: E402
from ragcli.ingest.pipeline import ingest_documents  # noqa: E402
from ragcli.analysis import analyze  # noqa: E402
from ragcli.retrieval.bm25 import BM25Retriever  # noqa: E402
from ragcli.store import DATABASE_NAME, Store  # noqa: E402
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl and queries.jsonl")
    parser.add_argument("--index", type=Path, default=Path("/tmp/ragcli-bench-bm25s"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import bm25s
    import Stemmer

    if not (args.index / DATABASE_NAME).is_file():
        from ragcli.config import load_settings
        from ragcli.embedding import load_embedder

        real = load_embedder(None, cache_dir=load_settings().cache_dir)
        embedder = HashVectors("standin", "standin-v1", 32)
        embedder.token_offsets = real.token_offsets  # chunk windows exactly as `rag eval` makes them
        started = time.perf_counter()
        ingest_documents(
            args.index, read_corpus(args.dataset / "corpus.jsonl"), embedder=embedder, group="medium"
        )
        print(f"ragcli ingest (stand-in vectors): {time.perf_counter() - started:.1f} s")
    queries = [json.loads(line)["text"] for line in (args.dataset / "queries.jsonl").open(encoding="utf-8")]
    store = Store.open(args.index)
    texts = [
        row[0] for row in store.db.execute("SELECT text FROM chunks WHERE group_name = 'medium' ORDER BY id")
    ]
    print(f"{len(texts)} chunks, {len(queries)} queries")

    stemmer = Stemmer.Stemmer("english")
    retriever_s = bm25s.BM25(k1=1.2, b=0.75)
    retriever_s.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )

    def s_single():
        for query in queries:
            tokens = bm25s.tokenize(query, stopwords="en", stemmer=stemmer, show_progress=False)
            retriever_s.retrieve(tokens, k=10, show_progress=False, n_threads=1)

    def s_batch():
        tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever_s.retrieve(tokens, k=10, show_progress=False, n_threads=1)

    # The same scoring work for both: bm25s indexes and queries ragcli's own analysed terms.
    same_s = bm25s.BM25(k1=1.2, b=0.75)
    same_s.index(
        [
            tokens.split()
            for (tokens,) in store.db.execute(
                "SELECT tokens FROM chunks WHERE group_name = 'medium' ORDER BY id"
            )
        ],
        show_progress=False,
    )

    def same_single():
        for query in queries:
            same_s.retrieve([analyze(query)], k=10, show_progress=False, n_threads=1)

    def same_batch():
        same_s.retrieve([analyze(query) for query in queries], k=10, show_progress=False, n_threads=1)

    ours = BM25Retriever(store, "medium")
    reader = PostingsReader()

    def r_single():
        for query in queries:
            ours.search(query, 10)

    def r_batch():
        ours.search_many(queries, 10)

    def r_ids():
        for query in queries:
            with store.snapshot():
                reader.top_k(store.db, "medium", analyze(query), 10)

    rows = [
        ("bm25s single (own tokenizer)", s_single),
        ("bm25s single (ragcli terms)", same_single),
        ("ragcli single (ids + scores)", r_ids),
        ("ragcli single (hits + text)", r_single),
        ("bm25s batched (own tokenizer)", s_batch),
        ("bm25s batched (ragcli terms)", same_batch),
        ("ragcli batched (hits + text)", r_batch),
    ]
    for name, run in rows:
        print(f"{name:<30} {best_of(args.rounds, run, len(queries)):.3f} ms/query", flush=True)
    store.close()


if __name__ == "__main__":
    main()
