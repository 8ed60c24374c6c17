"""Ingest speed and memory, each figure a ratio taken in this one run.

    python benchmarks/bench_ingest.py /work/shared/data/scifact/corpus.jsonl --docs 200 --scale 10

1. Writes the first N corpus documents (BEIR `title` + blank line + `text`) as .txt files.
2. `rag ingest` in a fresh process: chunks/s from files on disk to a committed index
   (the library's own timer, model load excluded) and the process's peak RSS.
3. The same chunk texts through the bare ONNX embedding session alone, and through
   sentence-transformers' `encode` alone (the baseline), model load excluded for both.
4. `rag ingest` again on the unchanged folder: embeddings computed and time vs the first.
5. `rag ingest` of a folder `--scale` times larger in a fresh process: peak RSS ratio.
Timings are for reading, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_docs(corpus: Path, folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with corpus.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number >= count:
                break
            record = json.loads(line)
            text = f"{record.get('title', '')}\n\n{record.get('text', '')}".strip()
            (folder / f"doc-{number:06d}.txt").write_text(text, encoding="utf-8")


def run_ingest(folder: Path, index: Path, cache: Path) -> tuple[dict, float, float]:
    """Run `rag ingest --json` in a new process; returns (report, wall seconds, peak RSS MiB)."""
    env = {**os.environ, "RAG_CACHE_DIR": str(cache)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "ragcli", "ingest", str(folder), "--index", str(index), "--json"],
            env=env,
            stdout=out,
            stderr=err,
        )
        # wait4 gives this child's own peak RSS (RUSAGE_CHILDREN would mix all children).
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if process.returncode:
            raise SystemExit(f"rag ingest failed: {err.read().decode()[-500:]}")
        return json.loads(out.read()), wall, usage.ru_maxrss / 1024


def chunk_texts(index: Path) -> list[str]:
    with sqlite3.connect(index / "index.db") as conn:
        return [row[0] for row in conn.execute("SELECT text FROM chunks ORDER BY id")]


EMBED_ONLY = """
import sys, time, json
texts = json.load(open(sys.argv[1]))
runtime = sys.argv[2]
if runtime == "sentence-transformers":
    from sentence_transformers import SentenceTransformer
    from ragcli.embedding.model_files import default_model_path
    model = SentenceTransformer(default_model_path(), device="cpu")
    model.encode(texts[:4])
    started = time.perf_counter()
    model.encode(texts, batch_size=int(sys.argv[4]), normalize_embeddings=True)
else:
    from pathlib import Path
    from ragcli.embedding import load_embedder
    embedder = load_embedder(None, cache_dir=Path(sys.argv[3]), runtime=runtime)
    embedder.embed(texts[:4])
    started = time.perf_counter()
    embedder.embed(texts)
print(time.perf_counter() - started)
"""


def embed_only(texts: list[str], runtime: str, cache: Path, scratch: Path, batch_size: int = 32) -> float:
    """Seconds to embed `texts` in a fresh process with a loaded, warmed-up model."""
    data = scratch / "texts.json"
    data.write_text(json.dumps(texts), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", EMBED_ONLY, str(data), runtime, str(cache), str(batch_size)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="BEIR corpus.jsonl")
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--scale", type=int, default=10, help="memory check: ingest this many times more")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragcli-bench-cache")
    parser.add_argument("--skip-st", action="store_true", help="skip the sentence-transformers baseline")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        small = scratch / "small"
        write_docs(args.corpus, small, args.docs)
        embed_only(["warm the export cache"], "onnx", args.cache_dir, scratch)
        report, wall, rss_small = run_ingest(small, scratch / "index-small", args.cache_dir)
        texts = chunk_texts(scratch / "index-small")
        ingest_rate = len(texts) / report["seconds"]
        onnx_rate = len(texts) / embed_only(texts, "onnx", args.cache_dir, scratch)
        print(f"corpus {args.corpus} - {args.docs} documents, {len(texts)} chunks")
        print(
            f"rag ingest end to end      {ingest_rate:7.1f} chunks/s  ({report['seconds']:.1f} s in ingest, "
            f"{wall:.1f} s wall with start-up)"
        )
        print(
            f"bare ONNX embedding        {onnx_rate:7.1f} chunks/s  -> ingest/embedding = "
            f"{ingest_rate / onnx_rate:.2f}x (target >= 0.85)"
        )
        if not args.skip_st:
            for batch in (32, 8):  # its default, and the batch size that suits this CPU best
                st_rate = len(texts) / embed_only(
                    texts, "sentence-transformers", args.cache_dir, scratch, batch
                )
                print(
                    f"sentence-transformers only {st_rate:7.1f} chunks/s  (encode batch_size={batch}) -> "
                    f"ingest/baseline = {ingest_rate / st_rate:.2f}x (target > 1)"
                )
        again, _, _ = run_ingest(small, scratch / "index-small", args.cache_dir)
        print(
            f"re-ingest unchanged        {again['embedded']} embeddings, {again['seconds']:.2f} s = "
            f"{100 * again['seconds'] / report['seconds']:.1f}% of the first (target <= 3%)"
        )
        if args.scale > 1:
            large = scratch / "large"
            write_docs(args.corpus, large, args.docs * args.scale)
            big, _, rss_large = run_ingest(large, scratch / "index-large", args.cache_dir)
            print(
                f"peak RSS                   {rss_small:.0f} MiB for {args.docs} docs, "
                f"{rss_large:.0f} MiB for "
                f"{args.docs * args.scale} docs ({big['chunks']} chunks) -> {rss_large / rss_small:.2f}x "
                "(target <= 1.5x)"
            )


if __name__ == "__main__":
    main()
