"""Ingest against the floor, and how soon a new file is searchable: each figure from this one run.

    python benchmarks/bench_ingest.py /work/shared/data/scifact/corpus.jsonl --docs 200 --folder-files 5000

1. Writes the first N corpus documents (BEIR `title` + blank line + `text`) as .txt files and
   runs `rag ingest` on them in a fresh process: its CPU time (user + system, from wait4) and
   wall time, start-up and model load included.
2. Runs a truly bare onnxruntime loop over the same chunk texts in a fresh process: the same
   ONNX graph and session options, the `tokenizers` tokenizer, texts sorted by length into
   batches of the same size, padding, the session, mean pooling and normalisation; no ragcli
   import. Its CPU and wall time, start-up included, are the floor the ingest is set against.
3. Makes a folder of `--folder-files` small files and one marked file walked last, and times,
   from the start of `rag ingest` on it, until `rag query --mode bm25` (polled in a loop) first
   finds the marked file, and the whole ingest (`--defer`: with `--defer-embedding`).
Timings are for reading, never asserted. On a loaded machine compare the CPU ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE = r"""
import json, sys, time
t0 = time.process_time()
texts = json.load(open(sys.argv[1]))
onnx_file, tokenizer_file = sys.argv[2], sys.argv[3]
batch, threads, lower = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1"
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
options = ort.SessionOptions()
options.intra_op_num_threads = threads
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
session = ort.InferenceSession(onnx_file, sess_options=options, providers=["CPUExecutionProvider"])
names = {i.name for i in session.get_inputs()}
tokenizer = Tokenizer.from_file(tokenizer_file)
tokenizer.no_padding()
tokenizer.enable_truncation(256)
prepared = [t.strip().lower() if lower else t.strip() for t in texts]
encodings = tokenizer.encode_batch(prepared)
order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
out = np.empty((len(texts), 384), dtype=np.float32)
for start in range(0, len(order), batch):
    rows = order[start:start + batch]
    longest = max(len(encodings[i].ids) for i in rows)
    ids = np.zeros((len(rows), longest), dtype=np.int64)
    mask = np.zeros((len(rows), longest), dtype=np.int64)
    for r, i in enumerate(rows):
        n = len(encodings[i].ids)
        ids[r, :n] = encodings[i].ids
        mask[r, :n] = 1
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    (hidden,) = session.run(None, {k: v for k, v in feed.items() if k in names})[:1]
    m = mask[:, :, None].astype(np.float32)
    pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
print(json.dumps({"cpu": time.process_time() - t0}))
"""


def write_docs(corpus: Path, folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with corpus.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number >= count:
                break
            record = json.loads(line)
            text = f"{record.get('title', '')}\n\n{record.get('text', '')}".strip()
            (folder / f"doc-{number:06d}.txt").write_text(text, encoding="utf-8")


def measured(command: list[str], env: dict) -> tuple[str, float, float]:
    """Run a process; (stdout, CPU seconds of that child alone, wall seconds)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{command[:4]} failed: {err.read().decode()[-800:]}")
        return out.read().decode(), usage.ru_utime + usage.ru_stime, wall


def rag_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragcli", *args]


def model_files(cache: Path) -> tuple[str, str, bool]:
    """The ONNX graph ragcli runs, its tokenizer file and lower-casing, as the embedder has them."""
    from ragcli.embedding import load_embedder
    from ragcli.embedding.export import cached_onnx
    from ragcli.embedding.model_files import default_model_path, read_model_config

    embedder = load_embedder(None, cache_dir=cache)
    config = read_model_config(Path(default_model_path()))
    onnx = cached_onnx(config, cache, fingerprint=embedder.fingerprint)
    return str(onnx), str(config.tokenizer_file), bool(config.do_lower_case)


def chunk_texts(index: Path) -> list[str]:
    with sqlite3.connect(index / "index.db") as conn:
        return [row[0] for row in conn.execute("SELECT text FROM chunks ORDER BY id")]


def against_the_floor(args, scratch: Path, env: dict) -> None:
    docs = scratch / "docs"
    write_docs(args.corpus, docs, args.docs)
    index = scratch / "index"
    out, cpu, wall = measured(rag_command("ingest", str(docs), "--index", str(index), "--json"), env)
    report = json.loads(out)
    texts = chunk_texts(index)
    data = scratch / "texts.json"
    data.write_text(json.dumps(texts), encoding="utf-8")
    from ragcli.embedding.onnx_runtime import cpu_count

    onnx, tokenizer, lower = model_files(args.cache_dir)
    bare = [
        sys.executable,
        "-c",
        BARE,
        str(data),
        onnx,
        tokenizer,
        "8",
        str(cpu_count()),
        "1" if lower else "0",
    ]
    _, bare_cpu, bare_wall = measured(bare, env)
    print(
        f"corpus {args.corpus.name}: {args.docs} documents, {len(texts)} chunks "
        f"({report['embedded']} embedded)"
    )
    print(f"rag ingest (whole process)     CPU {cpu:7.2f} s   wall {wall:7.2f} s")
    print(f"bare onnxruntime loop          CPU {bare_cpu:7.2f} s   wall {bare_wall:7.2f} s")
    print(
        f"ingest / bare                  CPU {cpu / bare_cpu:7.3f}x  throughput {bare_wall / wall:5.3f}x "
        "(targets: CPU <= 1.05x, throughput >= 0.95x)"
    )


def first_hit(args, scratch: Path, env: dict) -> None:
    """A fresh folder of small files plus one marked file (walked last); from the start of
    `rag ingest`, the time until `rag query --mode bm25` finds the marked file, and the
    whole ingest's time."""
    folder = scratch / "folder"
    folder.mkdir()
    words = [f"w{n}" for n in range(2000)]
    rng = random.Random(0)
    for number in range(args.folder_files):
        text = " ".join(rng.choice(words) for _ in range(60))
        (folder / f"file-{number:05d}.txt").write_text(f"File {number}. {text}\n", encoding="utf-8")
    (folder / "zz-new.txt").write_text("A newly added note about the quokka census on Rottnest.\n")
    index = scratch / "folder-index"
    found, whole, cpu = time_to_hit(folder, index, "quokka census", "zz-new.txt", args.defer, env)
    deferred = " (--defer-embedding)" if args.defer else ""
    print(
        f"fresh {args.folder_files + 1}-file folder{deferred}: the file walked last found by BM25 {found} "
        f"after `rag ingest` started; the whole ingest took {whole:.1f} s wall, {cpu:.1f} s CPU"
    )
    (folder / "zz-newer.txt").write_text("Another new note, on the numbat survey of Dryandra.\n")
    found, whole, cpu = time_to_hit(folder, index, "numbat survey", "zz-newer.txt", args.defer, env)
    print(
        f"one file added to the indexed folder{deferred}: found by BM25 {found} after `rag ingest` "
        f"started (target <= 5 s); the whole ingest took {whole:.1f} s wall, {cpu:.1f} s CPU"
    )


def time_to_hit(folder: Path, index: Path, query: str, name: str, defer: bool, env: dict):
    """Run `rag ingest`, polling `rag query --mode bm25` until `name` is the top hit:
    (seconds until then as text, whole ingest seconds, its CPU seconds)."""
    deferred = ["--defer-embedding"] if defer else []
    started = time.perf_counter()
    process = subprocess.Popen(
        rag_command("ingest", str(folder), "--index", str(index), *deferred),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    found_at = None
    while found_at is None and process.poll() is None:
        hit = subprocess.run(
            rag_command("query", query, "--mode", "bm25", "-k", "1", "--index", str(index)),
            env=env,
            capture_output=True,
            text=True,
        )
        if name in hit.stdout:
            found_at = time.perf_counter() - started
        else:
            time.sleep(0.25)
    _, _, usage = os.wait4(process.pid, 0)
    whole = time.perf_counter() - started
    found = f"{found_at:.2f} s" if found_at is not None else "only after the ingest ended"
    return found, whole, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="BEIR corpus.jsonl")
    parser.add_argument("--docs", type=int, default=200, help="SciFact documents against the floor (0: skip)")
    parser.add_argument("--folder-files", type=int, default=5000)
    parser.add_argument("--defer", action="store_true", help="ingest the folder with --defer-embedding")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "ragcli-bench-cache")
    args = parser.parse_args()
    env = {**os.environ, "RAG_CACHE_DIR": str(args.cache_dir)}
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        if args.docs:
            against_the_floor(args, scratch, env)
        if args.folder_files:
            first_hit(args, scratch, env)


if __name__ == "__main__":
    main()
