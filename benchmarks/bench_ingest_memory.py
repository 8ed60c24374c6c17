"""Peak memory and time of `rag ingest` for one big text file, against a 1 KB baseline.

Usage::

    python benchmarks/bench_ingest_memory.py --sizes 1,10,100 --no-newline 10

Each run is a fresh `rag ingest` process (the CLI's own `main`, same code path as the
installed command) whose peak RSS is read from the kernel (`wait4` rusage, ru_maxrss).
Everything real runs: reading, decoding, section-wise token splitting with the real model's
tokenizer, BM25 analysis, SQLite writes, postings, FAISS. Only the ONNX inference is replaced
by a hashed stand-in vector (same dimension): embedding 100 MB (about 400,000 chunks) with
all-MiniLM-L6-v2 at ~40 chunks/s would take hours, and its memory is bounded by the batch
(at most --batch-size chunks at a time) whatever the file size.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_text(path: Path, megabytes: float, newlines: bool) -> None:
    """Pseudo-English text of distinct words (so chunks do not repeat), in 1 MB writes."""
    rng = random.Random(13)
    syllables = ["ka", "lo", "mi", "ren", "sto", "va", "qui", "der", "an", "pel", "tur", "os"]
    vocabulary = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(50_000)]
    target = int(megabytes * 1_000_000)
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < target:
            words = rng.choices(vocabulary, k=150_000)
            if newlines:
                block = (
                    "\n".join(
                        " ".join(words[i : i + 12]) + ("\n" if i % 120 == 0 else "")
                        for i in range(0, len(words), 12)
                    )
                    + "\n"
                )
            else:
                block = " ".join(words) + " "
            block = block[: target - written]
            handle.write(block)
            written += len(block)


def child(file: str, index: str) -> None:
    """Run `rag ingest --index INDEX FILE` with hashed vectors instead of ONNX inference."""
    import hashlib

    import numpy as np

    import ragcli.generation.chooser
    from ragcli.cli import main

    real_loader = ragcli.generation.chooser.embedder_for

    class HashedVectors:
        def __init__(self, real):
            self.real = real
            self.model_id, self.dimension, self.fingerprint = real.model_id, real.dimension, real.fingerprint

        def token_offsets(self, text):
            return self.real.token_offsets(text)

        def embed(self, texts, batch_size=32):
            out = np.empty((len(texts), self.dimension), dtype=np.float32)
            for row, text in enumerate(texts):
                seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
                vector = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
                out[row] = vector / np.linalg.norm(vector)
            return out

    ragcli.generation.chooser.embedder_for = lambda *a, **k: HashedVectors(real_loader(*a, **k))
    sys.argv = ["rag", "ingest", "--index", index, file]
    main()


def run(file: Path, index: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one ingest process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", str(file), str(index)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ingest of {file} failed: {process.stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,100", help="file sizes in MB, with newlines")
    parser.add_argument("--no-newline", default="10", help="file sizes in MB without any newline")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    cases = [(float(s), True) for s in args.sizes.split(",") if s] + [
        (float(s), False) for s in args.no_newline.split(",") if s
    ]
    with tempfile.TemporaryDirectory(prefix="ragcli-mem-") as tmp:
        folder = Path(tmp)
        make_text(folder / "base.txt", 0.001, True)
        base_seconds, baseline = run(folder / "base.txt", folder / "index-base")
        print(f"baseline (1 KB file): {baseline:.0f} MB peak RSS, {base_seconds:.1f} s")
        print(f"{'file':>24} {'seconds':>8} {'s/MB':>6} {'peak MB':>8} {'over baseline':>14}")
        for megabytes, newlines in cases:
            file = folder / f"{megabytes:g}mb{'' if newlines else '-one-line'}.txt"
            make_text(file, megabytes, newlines)
            seconds, peak = run(file, folder / f"index-{file.stem}")
            label = f"{megabytes:g} MB" + ("" if newlines else ", no newline")
            print(
                f"{label:>24} {seconds:8.1f} {(seconds - base_seconds) / megabytes:6.2f} {peak:8.0f} "
                f"{peak - baseline:14.0f}",
                flush=True,
            )
            file.unlink()


if __name__ == "__main__":
    main()
