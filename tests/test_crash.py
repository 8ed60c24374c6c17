"""A real `rag ingest` process killed with SIGKILL mid-run leaves a usable index, and the
next run completes the job without duplicates. Uses the real default embedding model."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from runner import rag
from writes_held import killed_when, query_int

TOPICS = [
    "lighthouse keepers",
    "sourdough starters",
    "alpine glaciers",
    "river deltas",
    "honey bees",
    "tidal power",
    "paper making",
    "violin varnish",
    "desert lichens",
    "coral spawning",
]


def write_docs(folder: Path, count: int, start: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(start, start + count):
        topic = TOPICS[number % len(TOPICS)]
        body = " ".join(
            f"Note {number} on {topic}: observation {line} recorded carefully in the field "
            f"journal with date, place and weather."
            for line in range(4)
        )
        (folder / f"note-{number:04d}.txt").write_text(body, encoding="utf-8")


def committed_documents(index: Path) -> int:
    with sqlite3.connect(f"file:{index / 'index.db'}?mode=ro", uri=True, timeout=5) as conn:
        return documents_in(conn)


def documents_in(conn: sqlite3.Connection) -> int:
    return query_int(conn, "SELECT count(*) FROM documents")


def test_kill_9_mid_ingest_keeps_the_index_usable_and_resumable(tmp_path, isolated_home):
    env = {**os.environ}
    docs = tmp_path / "docs"
    write_docs(docs, 5)
    assert rag("ingest", str(docs), env=env).returncode == 0
    write_docs(docs, 195, start=5)

    process = subprocess.Popen(
        [sys.executable, "-m", "ragcli", "ingest", str(docs), "--batch-size", "8"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Held at a commit past the first 5 documents: the run cannot finish while the test sees
    # it still going and kills it (a poll alone could find it done on a fast machine).
    killed_when(isolated_home, process, lambda conn: documents_in(conn) > 5, "6 documents")
    killed_at = committed_documents(isolated_home)
    assert 5 < killed_at <= 200  # all text may be committed already: then it was embedding

    status = rag("status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["documents"] == killed_at
    assert rag("ls", "--json", env=env).returncode == 0

    resumed = rag("ingest", str(docs), "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["unchanged"] == killed_at and report["added"] == 200 - killed_at
    final = json.loads(rag("status", "--json", env=env).stdout)
    assert final["documents"] == 200
    group = final["groups"]["medium"]
    assert group["vectors_current"] and group["vectors"] == final["embeddings"]
    with sqlite3.connect(isolated_home / "index.db") as conn:
        duplicates = conn.execute(
            "SELECT count(*) FROM (SELECT doc_id, group_name, ord, count(*) AS n "
            "FROM chunks GROUP BY doc_id, group_name, ord HAVING n > 1)"
        ).fetchone()[0]
    assert duplicates == 0
