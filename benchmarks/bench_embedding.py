"""Embedding throughput: sentence-transformers vs ONNX fp32 (vs ONNX int8), and agreement.

    python benchmarks/bench_embedding.py /work/shared/data/scifact/corpus.jsonl --limit 500
    python benchmarks/bench_embedding.py CORPUS --int8 --cache-dir /tmp/ragcli-bench

Texts are BEIR `title + " " + text`. Prints chunks/s per runtime, the token-length
profile, and the mean/min cosine of each fast runtime to the reference vectors.
Timings are for reading, never asserted.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from ragcli.embedding import load_embedder


def read_corpus(path: Path, limit: int) -> list[str]:
    """The first `limit` documents of a BEIR corpus.jsonl as `title + " " + text`."""
    texts = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            texts.append(f"{record.get('title', '')} {record.get('text', '')}".strip())
            if len(texts) >= limit:
                break
    return texts


def timed(label: str, runtime: str, texts: list[str], args: argparse.Namespace) -> np.ndarray:
    """Load a runtime, warm it up, embed every text once and print the rate."""
    started = time.perf_counter()
    embedder = load_embedder(args.model, cache_dir=args.cache_dir, runtime=runtime)
    loaded = time.perf_counter() - started
    embedder.embed(texts[:4], batch_size=args.batch_size)
    started = time.perf_counter()
    vectors = embedder.embed(texts, batch_size=args.batch_size)
    elapsed = time.perf_counter() - started
    print(
        f"{label:<22} {len(texts) / elapsed:8.1f} chunks/s  "
        f"({elapsed:6.1f} s embed, {loaded:5.1f} s load incl. any export)"
    )
    return vectors


def agreement(label: str, vectors: np.ndarray, reference: np.ndarray) -> None:
    """Print mean and min row cosine between two unit-vector matrices."""
    cosines = (vectors * reference).sum(axis=1)
    print(f"  cosine {label:<26} mean {cosines.mean():.5f}  min {cosines.min():.5f}")


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="BEIR corpus.jsonl")
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model", default=None, help="sentence-transformers folder")
    parser.add_argument("--cache-dir", type=Path, default=None, help="ONNX cache (default: temp)")
    parser.add_argument("--int8", action="store_true", help="also build and time ONNX int8")
    args = parser.parse_args()
    args.cache_dir = args.cache_dir or Path(tempfile.mkdtemp(prefix="ragcli-bench-"))
    texts = read_corpus(args.corpus, args.limit)

    fp32 = timed("onnx fp32", "onnx", texts, args)
    probe = load_embedder(args.model, cache_dir=args.cache_dir)
    lengths = np.array([min(len(probe.token_offsets(t)), probe.max_tokens) for t in texts])
    print(
        f"{len(texts)} texts, tokens per text: mean {lengths.mean():.0f}, "
        f"median {np.median(lengths):.0f}, truncated {int((lengths >= probe.max_tokens).sum())}"
    )
    int8 = timed("onnx int8", "onnx-int8", texts, args) if args.int8 else None
    reference = timed("sentence-transformers", "sentence-transformers", texts, args)
    agreement("onnx fp32 vs reference", fp32, reference)
    if int8 is not None:
        agreement("onnx int8 vs reference", int8, reference)


if __name__ == "__main__":
    main()
