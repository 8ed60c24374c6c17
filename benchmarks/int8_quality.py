"""Dense nDCG@10 of the dynamic-int8 embedding runtime against fp32, on the same texts.

    python benchmarks/int8_quality.py /work/shared/data --scifact-others 1000 --docsqa-others 30

Each set is embedded by both runtimes (`load_embedder(runtime="onnx")` and `"onnx-int8"`) and
searched by exact cosine; nDCG@10 uses the set's judgments (BEIR qrels; docs-qa's gold pages,
a page scored by its best chunk, chunks cut by the default `medium` group's settings).
To fit a loaded 2-core machine the corpora can be subsampled, the same way for both runtimes
(every judged document, plus a seeded random sample of the others): the printed line says how.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import tempfile
import time
from pathlib import Path

import numpy as np


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    gains = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:10]))
    ideal = sum(
        g / math.log2(rank + 2) for rank, g in enumerate(sorted(relevant.values(), reverse=True)[:10])
    )
    return gains / ideal if ideal else 0.0


def beir(folder: Path, others: int | None, seed: int = 0):
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        qrels.setdefault(query, {})[doc] = int(score)
    docs = {}
    for line in (folder / "corpus.jsonl").read_text().splitlines():
        record = json.loads(line)
        docs[record["_id"]] = f"{record.get('title', '')}\n\n{record.get('text', '')}".strip()
    judged = {doc for rel in qrels.values() for doc in rel}
    rest = sorted(set(docs) - judged)
    if others is not None and others < len(rest):
        rest = random.Random(seed).sample(rest, others)
    kept = sorted(judged & set(docs)) + rest
    queries = {}
    for line in (folder / "queries.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["_id"] in qrels:
            queries[record["_id"]] = record["text"]
    units = [(doc, docs[doc]) for doc in kept]
    return units, queries, qrels, f"{len(kept)} of {len(docs)} documents, {len(queries)} queries"


def docs_qa(folder: Path, others: int, embedder, seed: int = 0):
    from ragcli.ingest.chunking import split_document
    from ragcli.ingest.readers import read_document
    from ragcli.ingest.splitting import PRESETS

    questions = [json.loads(line) for line in (folder / "qa.jsonl").read_text().splitlines() if line.strip()]
    pages = sorted(p.name for p in (folder / "corpus").iterdir())
    gold = {page for q in questions for page in q["relevant"]}
    rest = sorted(set(pages) - gold)
    rest = random.Random(seed).sample(rest, min(others, len(rest)))
    kept = sorted(gold & set(pages)) + rest
    units = []
    for page in kept:
        document = read_document(folder / "corpus" / page)
        for spans in split_document(document, PRESETS["medium"], embedder):
            units.extend((page, span.text) for span in spans)
    queries = {q["_id"]: q["question"] for q in questions}
    qrels = {q["_id"]: {page: 1 for page in q["relevant"]} for q in questions}
    return (
        units,
        queries,
        qrels,
        f"{len(kept)} of {len(pages)} pages ({len(units)} chunks), {len(queries)} questions",
    )


def evaluate(embedder, units, queries, qrels) -> tuple[float, float]:
    started = time.process_time()
    vectors = embedder.embed([text for _, text in units])
    seconds = time.process_time() - started
    ids = [doc for doc, _ in units]
    query_ids = list(queries)
    scores = embedder.embed([queries[q] for q in query_ids]) @ vectors.T
    total = 0.0
    for row, query in enumerate(query_ids):
        ranked: list[str] = []
        for index in np.argsort(-scores[row]):
            if ids[index] not in ranked:
                ranked.append(ids[index])
            if len(ranked) == 10:
                break
        total += ndcg10(ranked, qrels[query])
    return total / len(query_ids), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="folder holding scifact/, cranfield/ and docs-qa/")
    parser.add_argument("--scifact-others", type=int, default=None, help="unjudged SciFact docs kept (all)")
    parser.add_argument("--cranfield-others", type=int, default=None)
    parser.add_argument("--docsqa-others", type=int, default=1000, help="non-gold docs-qa pages kept")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragcli-bench-cache")
    args = parser.parse_args()
    from ragcli.embedding import load_embedder

    runtimes = {
        name: load_embedder(None, cache_dir=args.cache_dir, runtime=name) for name in ("onnx", "onnx-int8")
    }
    sets = {
        "scifact": beir(args.data / "scifact", args.scifact_others),
        "cranfield": beir(args.data / "cranfield", args.cranfield_others),
        "docs-qa": docs_qa(args.data / "docs-qa", args.docsqa_others, runtimes["onnx"]),
    }
    for name, (units, queries, qrels, described) in sets.items():
        fp32, fp32_cpu = evaluate(runtimes["onnx"], units, queries, qrels)
        int8, int8_cpu = evaluate(runtimes["onnx-int8"], units, queries, qrels)
        print(
            f"{name:10s} {described}: nDCG@10 fp32 {fp32:.4f}, int8 {int8:.4f}, "
            f"difference {int8 - fp32:+.4f}; embedding CPU fp32 {fp32_cpu:.0f} s, int8 {int8_cpu:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
