"""Offline fusion study: dump per-query BM25 and dense lists once, then score fusions in seconds.

    RAG_CACHE_DIR=/tmp/fusion/cache python benchmarks/fusion_tuning.py dump /work/shared/data/scifact ...
    python benchmarks/fusion_tuning.py report /tmp/fusion/dumps

`dump` opens each set's evaluation index (the one `rag eval retrieval` builds under the cache
dir; run that first) and writes, per query, the top-100 chunk hits of BM25 and of dense with
their document ids and scores, to ``<out>/<set>.json``, and the query vectors and every chunk's
stored vector to ``<out>/<set>.npz``. `report` replays the shipped functions (the fusions of
`ragcli.retrieval.fusion`, and the default hybrid's feedback pass with exact cosine over all
chunks) exactly as `rag eval retrieval` scores them (fuse chunk hits, best chunk per document,
nDCG@10 by ir-measures; the same figures to 4 decimals) and prints one table per query
half: the "tune" half (even positions, in the order queries first appear in qrels/test.tsv) on
which constants were chosen, and the "report" half (odd positions) quoted in the README. It also
prints, as a stand-in for sets where dense leads, the queries where dense beats BM25 and a
"dense-led" subset (all of those plus BM25-won queries while dense still leads by 0.10 on
average), a cross-set leave-one-out choice of the adaptive fusion's prior and spread depth, and
the default hybrid under other feedback weights and other top-gap boosts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

DEPTH = 100


def dump(sets: list[Path], out: Path) -> None:
    """Write `<out>/<set>.json` (per query, both retrievers' top-DEPTH chunk hits) and
    `<out>/<set>.npz` (query vectors, every chunk's id and stored vector), for the feedback step."""
    from ragcli.config import load_settings
    from ragcli.evaluation.datasets import load_retrieval_set
    from ragcli.evaluation.indexes import dataset_index_path
    import numpy as np

    from ragcli.retrieval.search import Searcher

    out.mkdir(parents=True, exist_ok=True)
    settings = load_settings()
    for source in sets:
        dataset = load_retrieval_set(source)
        index = dataset_index_path(source, settings=settings)
        queries = {}
        with Searcher(index, settings=settings) as searcher:
            group = searcher.resolve_group(None)
            for qid, text in dataset.queries.items():
                queries[qid] = (
                    {"text": text}
                    | {
                        name: [
                            [hit.chunk.id, hit.chunk.path, hit.score]
                            for hit in searcher.retriever(name, group).search(text, DEPTH)
                        ]
                        for name in ("bm25", "dense")
                    }
                    | {"idf": idfs(searcher.store.db, group, text)}
                )
            dense = searcher.retriever("dense", group)
            query_vectors = np.concatenate([dense.embed(text) for text in dataset.queries.values()])
            rows = searcher.store.db.execute(
                "SELECT c.id, d.path FROM chunks c JOIN documents d ON d.id = c.doc_id "
                "WHERE c.group_name = ? AND c.embedding_id IS NOT NULL ORDER BY c.id",
                [group],
            ).fetchall()
            chunk_ids = np.array([row[0] for row in rows], dtype=np.int64)
            chunk_paths = np.array([row[1] for row in rows])
            chunk_vectors = dense.chunk_vectors([int(i) for i in chunk_ids], query_vectors.shape[1])
        payload = {"queries": queries, "qrels": {q: dict(r) for q, r in dataset.qrels.items()}}
        (out / f"{dataset.name}.json").write_text(json.dumps(payload))
        np.savez(
            out / f"{dataset.name}.npz",
            queries=query_vectors,
            chunk_ids=chunk_ids,
            paths=chunk_paths,
            vectors=chunk_vectors,
        )
        print(f"{dataset.name}: {len(queries)} queries", file=sys.stderr)


def idfs(db, group: str, text: str) -> list[float]:
    """The BM25 idf of each analysed query term (repeats kept), as `postings_reader.top_k` computes it."""
    import math

    from ragcli.analysis import analyze
    from ragcli.store.local.postings import IDF_FLOOR, collection_stats, term_postings

    docs, _ = collection_stats(db, group)
    values = []
    for term in analyze(text):
        n = len(term_postings(db, group, term)[0])
        idf = math.log(docs - n + 0.5) - math.log(n + 0.5)
        values.append(IDF_FLOOR if idf <= 0 else idf)
    return values


def load(folder: Path) -> dict[str, dict]:
    """Set name -> dumped payload, with "feedback": per query, the dense list of the default
    hybrid's second pass (query vector moved toward the best fused hit), when vectors were dumped."""
    data = {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}
    for name, payload in data.items():
        if (folder / f"{name}.npz").is_file():
            add_feedback(payload, folder / f"{name}.npz")
    return data


def add_feedback(
    payload: dict, vectors_file: Path, weight: float | None = None, gap_boost: float | None = None
) -> None:
    """Replay `Searcher._adaptive_hybrid`'s feedback pass exactly, with exact cosine over all chunks
    (`weight`, `gap_boost`: other constants than the shipped ones)."""
    import numpy as np

    from ragcli.retrieval.search import FEEDBACK_WEIGHT
    from ragcli.retrieval.dense import feedback_vector
    from ragcli.retrieval.fusion import GAP_BOOST, adaptive_fusion

    arrays = np.load(vectors_file)
    ids, paths = arrays["chunk_ids"], arrays["paths"]
    rows = {int(cid): i for i, cid in enumerate(ids)}
    boost = GAP_BOOST if gap_boost is None else gap_boost
    for position, rec in enumerate(payload["queries"].values()):
        first, _ = adaptive_fusion(
            {n: [(cid, score) for cid, _, score in rec[n]] for n in ("bm25", "dense")}, gap_boost=boost
        )
        if not first or first[0][0] not in rows:
            rec["feedback"] = rec["dense"]
            continue
        moved = feedback_vector(
            arrays["queries"][position],
            arrays["vectors"][[rows[first[0][0]]]],
            FEEDBACK_WEIGHT if weight is None else weight,
        )
        scores = arrays["vectors"] @ moved[0]
        top = np.argsort(-scores, kind="stable")[:DEPTH]
        rec["feedback"] = [[int(ids[j]), str(paths[j]), float(scores[j])] for j in top]


Fuser = Callable[[dict], list[tuple[str, float]]]


def as_hits(entries: list) -> list:
    """Dumped [chunk id, doc, score] rows as `Hit`s (chunk carries id and path only)."""
    from ragcli.types import Chunk, Hit

    return [
        Hit(Chunk(cid, 0, "", 0, "", 0, 0, None, doc), score, rank)
        for rank, (cid, doc, score) in enumerate(entries, start=1)
    ]


def doc_run(hits: list) -> dict[str, float]:
    """Best chunk per document, scores strictly falling as `document_scores` requires."""
    from ragcli.evaluation.retrieval_eval import document_scores

    return document_scores("", hits)


def per_query_ndcg(qrels: dict, run: dict) -> dict[str, float]:
    """nDCG@10 per query (judged queries only; missing runs count 0)."""
    import ir_measures

    measure = ir_measures.parse_measure("nDCG@10")
    judged = {q: r for q, r in qrels.items() if any(v > 0 for v in r.values())}
    scores = {q: 0.0 for q in judged}
    runs = {q: run.get(q) or {"__none__": 0.0} for q in judged}
    for metric in ir_measures.iter_calc([measure], judged, runs):
        scores[metric.query_id] = metric.value
    return scores


def variants() -> dict[str, Callable[[dict], list]]:
    """Name -> function(query record) -> fused hits, over the shipped fusion functions."""
    from ragcli.retrieval import fusion

    def single(name):
        return lambda rec: as_hits(rec[name])

    def fused(**kw):
        return lambda rec: fusion.fuse_hits({n: as_hits(rec[n]) for n in ("bm25", "dense")}, **kw)

    table = {"bm25": single("bm25"), "dense": single("dense"), "rrf": fused(fusion="rrf")}
    table["minmax"] = fused(fusion="score")
    table["adaptive, one pass"] = fused(fusion="adaptive")
    table["default hybrid"] = lambda rec: fusion.fuse_hits(
        {"bm25": as_hits(rec["bm25"]), "dense": as_hits(rec.get("feedback", rec["dense"]))}
    )
    return table


def score_all(data: dict, table: dict) -> dict[str, dict[str, dict[str, float]]]:
    """set -> variant -> query -> nDCG@10."""
    result = {}
    for set_name, payload in data.items():
        result[set_name] = {}
        for name, fuse in table.items():
            run = {qid: doc_run(fuse(rec)) for qid, rec in payload["queries"].items()}
            result[set_name][name] = per_query_ndcg(payload["qrels"], run)
    return result


def halves(query_ids: list[str]) -> dict[str, list[str]]:
    """Tune = even positions, report = odd positions (order of first appearance in qrels/test.tsv)."""
    return {"tune": query_ids[0::2], "report": query_ids[1::2], "all": query_ids}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def dense_led(bm25: dict, dense: dict, ids: list[str], lead: float = 0.10) -> list[str]:
    """Queries where dense >= BM25, plus BM25-won ones (in order) while dense leads by `lead` on average."""
    keep = [q for q in ids if dense[q] >= bm25[q]]
    for q in ids:
        if dense[q] < bm25[q] and mean(dense[x] - bm25[x] for x in keep + [q]) >= lead:
            keep.append(q)
    return keep


def report(scores: dict, data: dict) -> None:
    """Print nDCG@10 per set, half and variant, plus the dense-beats-BM25 and dense-led subsets."""
    for set_name, by_variant in scores.items():
        qids = list(by_variant["bm25"])
        parts = halves(qids)
        dense_wins = [q for q in qids if by_variant["dense"][q] > by_variant["bm25"][q]]
        parts["dense>bm25"] = dense_wins
        parts["dense-led"] = dense_led(by_variant["bm25"], by_variant["dense"], qids)
        print(f"\n{set_name}: " + "  ".join(f"{k}={len(v)}" for k, v in parts.items()))
        print(f"{'variant':<20}" + "".join(f"{k:>12}" for k in parts))
        for name, per_query in by_variant.items():
            cells = (f"{mean(per_query[q] for q in ids):>12.4f}" for ids in parts.values())
            print(f"{name:<20}" + "".join(cells))


GRID = [(prior, depth) for prior in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9) for depth in (10, 20)]


def leave_one_out(data: dict) -> None:
    """For each set: the (dense prior, depth) maximising the mean gain over the best single mode
    on the other two sets' tune halves, and what it scores on the held-out set's report half."""

    def adaptive(prior: float, depth: int):
        priors = {"bm25": round(1 - prior, 4), "dense": prior}
        return lambda rec: _adaptive(rec, priors, depth)

    table = {"bm25": lambda rec: as_hits(rec["bm25"]), "dense": lambda rec: as_hits(rec["dense"])}
    table |= {f"{p}/{d}": adaptive(p, d) for p, d in GRID}
    scores = score_all(data, table)

    def gain(set_name: str, name: str, part: str) -> float:
        ids = halves(list(scores[set_name]["bm25"]))[part]
        best = max(mean(scores[set_name][m][q] for q in ids) for m in ("bm25", "dense"))
        return mean(scores[set_name][name][q] for q in ids) - best

    print("\nleave-one-out (dense prior/spread depth chosen on the other sets' tune halves):")
    for held in scores:
        others = [s for s in scores if s != held]
        choice = max((f"{p}/{d}" for p, d in GRID), key=lambda n: mean(gain(s, n, "tune") for s in others))
        ids = halves(list(scores[held]["bm25"]))["report"]
        print(
            f"  {held:<10} choose {choice:<9} report-half nDCG@10 "
            f"{mean(scores[held][choice][q] for q in ids):.4f} (gain {gain(held, choice, 'report'):+.4f})"
        )


FEEDBACK_GRID = (0.0, 0.3, 0.6, 1.0)


def feedback_grid(folder: Path, data: dict) -> None:
    """The default hybrid with other feedback weights (0 = one pass), per half: how 0.6 was chosen."""
    from ragcli.retrieval import fusion

    print("\nfeedback weight (default hybrid, nDCG@10 tune / report half):")
    for weight in FEEDBACK_GRID:
        cells = []
        for name, payload in data.items():
            add_feedback(payload, folder / f"{name}.npz", weight)
            run = {
                qid: doc_run(
                    fusion.fuse_hits({"bm25": as_hits(rec["bm25"]), "dense": as_hits(rec["feedback"])})
                )
                for qid, rec in payload["queries"].items()
            }
            scores = per_query_ndcg(payload["qrels"], run)
            parts = halves(list(scores))
            cells.append(
                f"{name} {mean(scores[q] for q in parts['tune']):.4f} / "
                f"{mean(scores[q] for q in parts['report']):.4f}"
            )
        print(f"  {weight:<4} " + "   ".join(cells))


GAP_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)


def gap_grid(folder: Path, data: dict) -> None:
    """The default hybrid with other top-gap boosts (0 = spread alone), per half and on the
    dense-led subset (hybrid minus dense), then the mean gain over the best single mode on the
    tune halves: how `fusion.GAP_BOOST` was chosen."""
    from ragcli.retrieval.fusion import SPREAD_DEPTH

    singles = score_all(data, {n: (lambda rec, n=n: as_hits(rec[n])) for n in ("bm25", "dense")})
    print("\ntop-gap boost (default hybrid, nDCG@10 tune / report half, dense-led minus dense):")
    for boost in GAP_GRID:
        cells, gains = [], []
        for name, payload in data.items():
            add_feedback(payload, folder / f"{name}.npz", gap_boost=boost)
            run = {
                qid: doc_run(_adaptive(rec, None, SPREAD_DEPTH, boost, second="feedback"))
                for qid, rec in payload["queries"].items()
            }
            scores = per_query_ndcg(payload["qrels"], run)
            parts = halves(list(scores))
            bm25, dense = singles[name]["bm25"], singles[name]["dense"]
            led = dense_led(bm25, dense, list(scores))
            best = max(mean(bm25[q] for q in parts["tune"]), mean(dense[q] for q in parts["tune"]))
            gains.append(mean(scores[q] for q in parts["tune"]) - best)
            cells.append(
                f"{name} {mean(scores[q] for q in parts['tune']):.4f} / "
                f"{mean(scores[q] for q in parts['report']):.4f} "
                f"({mean(scores[q] - dense[q] for q in led):+.4f})"
            )
        print(f"  {boost:<4} " + "   ".join(cells) + f"   tune gain {mean(gains):+.4f}")
    for name, payload in data.items():  # back to the shipped constants
        add_feedback(payload, folder / f"{name}.npz")


def _adaptive(
    rec: dict, priors: dict | None, depth: int, gap_boost: float | None = None, second: str = "dense"
) -> list:
    """Fused hits of the adaptive fusion with other constants, ids as the dumped chunk rows;
    `second` names the dense list fused ("feedback": the default hybrid's second pass)."""
    from ragcli.retrieval.fusion import GAP_BOOST, PRIORS, adaptive_fusion

    lists = {"bm25": rec["bm25"], "dense": rec[second]}
    rows = {cid: (cid, doc, score) for entries in lists.values() for cid, doc, score in entries}
    fused, _ = adaptive_fusion(
        {n: [(cid, s) for cid, _, s in entries] for n, entries in lists.items()},
        priors=PRIORS if priors is None else priors,
        depth=depth,
        gap_boost=GAP_BOOST if gap_boost is None else gap_boost,
    )
    return as_hits([[cid, rows[cid][1], score] for cid, score in fused])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("sets", nargs="+", type=Path)
    d.add_argument("--out", type=Path, default=Path("/tmp/fusion/dumps"))
    r = sub.add_parser("report")
    r.add_argument("folder", type=Path, nargs="?", default=Path("/tmp/fusion/dumps"))
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.sets, args.out)
    else:
        data = load(args.folder)
        report(score_all(data, variants()), data)
        leave_one_out(data)
        if all((args.folder / f"{name}.npz").is_file() for name in data):
            feedback_grid(args.folder, data)
            gap_grid(args.folder, data)


if __name__ == "__main__":
    main()
