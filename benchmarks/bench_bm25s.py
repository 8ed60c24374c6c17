from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).parent))

from standin import HashVectors  # noqa: E402

from ragcli import open_index  # noqa: E402
from ragcli.analysis import index_terms  # noqa: E402
from ragcli.evaluation.datasets import read_corpus  # noqa: E402
from ragcli.ingest.pipeline import ingest_documents  # noqa: E402
from ragcli.store.local.database import Store  # noqa: E402
from ragcli.store.ownership import DATABASE_NAME  # noqa: E402
from ragcli.store.local.postings import collection_stats, term_postings, term_scores  # noqa: E402
from ragcli.store.local.postings_reader import PostingsReader  # noqa: E402

GROUP = "medium"
K = 10


def timed(run: Callable[[], None], count: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per query of one pass of `run` over `count` queries."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return (time.process_time() - cpu) * 1000 / count, (time.perf_counter() - wall) * 1000 / count


def interleaved(
    runs: dict[str, Callable[[], None]], count: int, rounds: int
) -> dict[str, tuple[float, float]]:
    """Each run's best (CPU ms, wall ms) per query over `rounds` passes, runs interleaved per round."""
    for run in runs.values():  # warm-up: caches filled, lazy imports done
        run()
    best = {name: (float("inf"), float("inf")) for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            cpu, wall = timed(run, count)
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
    return best


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


def bm25s_backends() -> list[str]:
    """bm25s' scoring backends installed here: numpy always, numba (its fastest) when importable."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return ["numpy"]
    return ["numpy", "numba"]


def bm25s_runs(store: Store, queries: list[str]) -> dict[str, Callable[[], None]]:
    """bm25s with its own tokenizer, per backend: single queries at n_threads=0, batched at 0 and 1."""
    import bm25s
    import Stemmer

    texts = [
        row[0]
        for row in store.db.execute("SELECT text FROM chunks WHERE group_name = ? ORDER BY id", [GROUP])
    ]
    backends = bm25s_backends()
    print(f"{len(texts)} chunks, {len(queries)} queries; bm25s {bm25s.__version__}, backends {backends}")
    stemmer = Stemmer.Stemmer("english")
    runs: dict[str, Callable[[], None]] = {}
    for backend in backends:
        model = bm25s.BM25(k1=1.2, b=0.75, backend=backend)
        model.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
        )

        def single(model=model):
            for query in queries:
                tokens = bm25s.tokenize(query, stopwords="en", stemmer=stemmer, show_progress=False)
                model.retrieve(tokens, k=K, show_progress=False, n_threads=0)

        def batched(threads: int, model=model) -> Callable[[], None]:
            def run():
                tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
                model.retrieve(tokens, k=K, show_progress=False, n_threads=threads)

            return run

        runs[f"bm25s {backend} single n_threads=0"] = single
        runs[f"bm25s {backend} batch n_threads=0"] = batched(0)
        runs[f"bm25s {backend} batch n_threads=1"] = batched(1)
    return runs


def csc_floor(store: Store, queries: list[str]) -> Callable[[], None]:
    """The same BM25 scores precomputed per posting in a CSC matrix: concatenate, bincount, top 10."""
    import numpy as np
    import scipy.sparse

    db = store.db
    docs, average = collection_stats(db, GROUP)
    ids = [row[0] for row in db.execute("SELECT id FROM chunks WHERE group_name = ? ORDER BY id", [GROUP])]
    row_of = {chunk_id: row for row, chunk_id in enumerate(ids)}
    vocabulary = [
        row[0] for row in db.execute("SELECT DISTINCT term FROM bm25_postings WHERE group_name = ?", [GROUP])
    ]
    columns = {term: column for column, term in enumerate(vocabulary)}
    rows, cols, values = [], [], []
    for term, column in columns.items():
        chunk_ids, tfs, lengths = term_postings(db, GROUP, term)
        rows.extend(row_of[int(c)] for c in chunk_ids)
        cols.extend([column] * len(chunk_ids))
        values.append(term_scores(chunk_ids, tfs, lengths, docs, average))
    matrix = scipy.sparse.csc_matrix((np.concatenate(values), (rows, cols)), shape=(len(ids), len(columns)))
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    chunk_ids = np.asarray(ids)

    def run():
        for query in queries:
            wanted = [columns[t] for t in index_terms(query) if t in columns]
            if not wanted:
                continue
            rows = np.concatenate([indices[indptr[c] : indptr[c + 1]] for c in wanted])
            weights = np.concatenate([data[indptr[c] : indptr[c + 1]] for c in wanted])
            totals = np.bincount(rows, weights=weights, minlength=len(ids))
            # argpartition over the matched chunks only: on the whole accumulator numpy 2's
            # introselect slows down badly on the many tied zeros (about 1 ms here).
            matched = np.flatnonzero(totals)
            if len(matched) > K:
                matched = matched[np.argpartition(totals[matched], -K)[-K:]]
            top = matched[np.argsort(-totals[matched])]
            [(int(chunk_ids[r]), float(totals[r])) for r in top]

    return run


def ragcli_runs(store: Store, index_path: Path, queries: list[str]) -> dict[str, Callable[[], None]]:
    """ragcli's public API (Hits with text, path, metadata) and its engine (ids and scores)."""
    index = open_index(index_path)
    reader = PostingsReader()

    def public_single():
        for query in queries:
            index.search(query, mode="bm25", top_k=K)

    def public_batch():
        index.search_many(queries, mode="bm25", top_k=K)

    def engine_single():
        for query in queries:
            with store.snapshot():
                reader.top_k(store.db, GROUP, index_terms(query), K)

    return {
        "ragcli public single": public_single,
        "ragcli public batch": public_batch,
        "ragcli engine single": engine_single,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dataset", type=Path, help="BEIR folder with corpus.jsonl and queries.jsonl")
    parser.add_argument("--index", type=Path, default=Path("/tmp/ragcli-bench-bm25s"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stdin", action="store_true", help="also time `rag query -` end to end")
    args = parser.parse_args()

    if not (args.index / DATABASE_NAME).is_file():
        build_index(args.index, args.dataset)
    queries = [json.loads(line)["text"] for line in (args.dataset / "queries.jsonl").open(encoding="utf-8")]
    store = Store.open(args.index)
    runs = {
        **bm25s_runs(store, queries),
        **ragcli_runs(store, args.index, queries),
        "CSC floor single": csc_floor(store, queries),
    }
    best = interleaved(runs, len(queries), args.rounds)
    print(f"{'per query, best of ' + str(args.rounds):<34} {'CPU ms':>8} {'wall ms':>8}")
    for name, (cpu, wall) in best.items():
        print(f"{name:<34} {cpu:8.4f} {wall:8.4f}")
    cpu = {name: value[0] for name, value in best.items()}
    single_best = min(value for name, value in cpu.items() if name.startswith("bm25s") and "single" in name)
    batch_best = min(value for name, value in cpu.items() if name.startswith("bm25s") and "batch" in name)
    ratios = [
        ("public single / bm25s single (best backend)", cpu["ragcli public single"] / single_best, 0.8),
        ("public batch / bm25s batch (best setting)", cpu["ragcli public batch"] / batch_best, 0.8),
        ("engine / CSC floor", cpu["ragcli engine single"] / cpu["CSC floor single"], 1.5),
        ("public single / engine", cpu["ragcli public single"] / cpu["ragcli engine single"], 1.2),
    ]
    for name, ratio, target in ratios:
        print(f"{name:<44} {ratio:5.2f}x CPU (target <= {target})")
    if args.stdin:
        print_stdin(args.index, queries, args.rounds)
    store.close()


if __name__ == "__main__":
    main()
