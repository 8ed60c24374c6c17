"""`rag ingest DIR --watch` figures: save-to-searchable latency and an idle watcher's CPU.

Usage:
    python benchmarks/bench_watch.py [--edits 50] [--idle 30] [--work /tmp/bench-watch]

1. Starts the installed `rag ingest DIR --watch` on a folder of 20 one-page notes (about
   350 words each) with the default embedding model, and waits for it to catch up.
2. Save to searchable, --edits times: rewrite one note with a new unique word (plain write,
   or every other edit an editor-style write-to-temp-then-rename) and time until that word's
   chunk is committed together with the run's vectors (the index's `last_ingest` changed
   and the chunk is there), polled every 10 ms read-only from SQLite. Median, min, max.
   The last edit is then checked with a real `rag query --mode bm25`.
3. Idle CPU: user+system ticks of the watcher process from /proc/<pid>/stat over --idle
   seconds with no changes, as a percentage of one core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import time
from pathlib import Path

WORDS = (
    "lighthouse keeper lamp harbour storm granite tower beam ships rocks tide glass winter log "
    "candle oil lens brass keeper coast fog bell signal rescue"
).split()


def page(number: int, marker: str) -> str:
    body = " ".join(WORDS[(number + i) % len(WORDS)] for i in range(340))
    return f"Note {number}. {marker}. {body}\n"


def committed(db: Path, marker: str, before: str | None) -> bool:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        last = conn.execute("SELECT value FROM meta WHERE key = 'last_ingest'").fetchone()
        if last is None or last[0] == before:
            return False
        return (
            conn.execute("SELECT 1 FROM chunks WHERE text LIKE ? LIMIT 1", [f"%{marker}%"]).fetchone()
            is not None
        )


def last_ingest(db: Path) -> str | None:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'last_ingest'").fetchone()
        return row[0] if row else None


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-watch"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    folder, index = args.work / "notes", args.work / "index"
    folder.mkdir(parents=True)
    for number in range(20):
        (folder / f"note-{number:02d}.md").write_text(page(number, "start"), encoding="utf-8")
    log = (args.work / "watch.err").open("w")
    watcher = subprocess.Popen(
        [shutil.which("rag") or "rag", "ingest", str(folder), "--watch", "--index", str(index)],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        while "watching" not in (args.work / "watch.err").read_text():
            assert watcher.poll() is None, (args.work / "watch.err").read_text()
            time.sleep(0.2)
        db = index / "index.db"
        latencies = []
        for edit in range(args.edits):
            marker = f"zqx{edit:04d}marker"
            target = folder / f"note-{edit % 20:02d}.md"
            before = last_ingest(db)
            time.sleep(0.3)
            started = time.perf_counter()
            if edit % 2:
                temp = folder / f".{target.name}.tmp"
                temp.write_text(page(edit, marker), encoding="utf-8")
                os.replace(temp, target)
            else:
                target.write_text(page(edit, marker), encoding="utf-8")
            while not committed(db, marker, before):
                time.sleep(0.01)
            latencies.append(time.perf_counter() - started)
        found = subprocess.run(
            [
                shutil.which("rag") or "rag",
                "query",
                marker,
                "--mode",
                "bm25",
                "--format",
                "paths",
                "--index",
                str(index),
            ],
            capture_output=True,
            text=True,
        )
        assert str(target) in found.stdout.split(), found
        print(
            f"save -> searchable: median {statistics.median(latencies):.3f} s, min {min(latencies):.3f}, "
            f"max {max(latencies):.3f} ({args.edits} edits of a one-page note, half via temp+rename)"
        )
        time.sleep(3)
        ticks, started = cpu_ticks(watcher.pid), time.monotonic()
        time.sleep(args.idle)
        used = (cpu_ticks(watcher.pid) - ticks) / os.sysconf("SC_CLK_TCK")
        elapsed = time.monotonic() - started
        print(
            f"idle watcher CPU: {used:.2f} s over {elapsed:.0f} s = {100 * used / elapsed:.2f} % of one core"
        )
    finally:
        watcher.send_signal(signal.SIGINT)
        print(f"watcher exit code after Ctrl-C: {watcher.wait(timeout=300)}")
        log.close()


if __name__ == "__main__":
    main()
