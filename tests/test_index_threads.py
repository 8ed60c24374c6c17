"""An `Index` shared by threads: its calls take turns, so each gets what it would alone."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import ragcli
from ragcli.types import IngestOptions
from test_index import docs, loads  # noqa: F401 (fixtures)

QUERIES = ["lighthouse lens", "sourdough starter", "great wall", "tea leaves", "octopus arms", "peaks"]


def test_threads_searching_one_index_get_what_one_thread_gets(docs, loads):  # noqa: F811
    with ragcli.open_index("idx", mode="bm25") as index:
        index.ingest([docs], IngestOptions(split_by="word", chunk_size=30, chunk_overlap=0))
        alone = {query: index.search(query, top_k=3) for query in QUERIES}
        index.close()
        seen, errors = [], []

        def work(start: int) -> None:
            for n in range(60):
                query = QUERIES[(start + n) % len(QUERIES)]
                try:
                    seen.append(index.search(query, top_k=3) == alone[query])
                except Exception as error:  # noqa: BLE001 (collected for the assertion)
                    errors.append(repr(error))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # threads switch often, as on a busy machine
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            sys.setswitchinterval(switch)
    assert errors == [] and len(seen) == 480 and all(seen)


CLOSE_WHILE_SEARCHING = """
import sys, threading, ragcli
index = ragcli.open_index(sys.argv[1], mode="bm25")
def work():
    for n in range(200):
        index.search("lighthouse lens" if n % 2 else "sourdough", top_k=3)
        if n % 20 == 0:
            index.close()
threads = [threading.Thread(target=work) for _ in range(6)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
print("ok")
"""


def test_close_while_other_threads_search_does_not_crash(docs, loads, tmp_path):  # noqa: F811
    with ragcli.open_index(tmp_path / "idx") as index:
        index.ingest([docs], IngestOptions(split_by="word", chunk_size=30, chunk_overlap=0))
    script = [sys.executable, "-c", CLOSE_WHILE_SEARCHING, str(tmp_path / "idx")]
    env = {**os.environ, "PYTHONPATH": str(Path(ragcli.__file__).parents[1])}
    done = subprocess.run(script, capture_output=True, text=True, timeout=120, env=env)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]
