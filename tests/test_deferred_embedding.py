"""Searchable first, embedded next, through the real `rag` and the real embedding model.

`rag ingest` commits text and BM25 postings before vectors; `--defer-embedding` stops there;
`rag embed` (or `--background`) adds the vectors, resumable after kill -9; dense and hybrid
queries meanwhile rank the chunks without a vector by BM25 and say how much is covered;
`rag status` stays honest about it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner import rag
from writes_held import killed_when

COVERAGE = "dense covers"
TOPICS = ["lighthouse keepers", "sourdough starters", "alpine glaciers", "river deltas", "honey bees"]


def write_docs(folder: Path, count: int, start: int = 0, lines: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(start, start + count):
        topic = TOPICS[number % len(TOPICS)]
        body = " ".join(
            f"Note {number} on {topic}: observation {line} written in the field journal."
            for line in range(lines)
        )
        (folder / f"note-{number:04d}.txt").write_text(body, encoding="utf-8")
    return folder


def status(index: Path) -> dict:
    result = rag("status", "--json", "--index", str(index))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def embedded_chunks(index: Path) -> tuple[int, int]:
    """(chunks with a vector, chunks), read as another process would while a writer runs."""
    try:
        with sqlite3.connect(f"file:{index / 'index.db'}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT count(embedding_id), count(*) FROM chunks").fetchone()
    except sqlite3.Error:
        return 0, 0


def test_a_deferred_ingest_is_searchable_by_bm25_and_status_reports_the_share(tmp_path, isolated_home):
    docs = write_docs(tmp_path / "docs", 6)
    (docs / "zebra.txt").write_text("The quagga was a subspecies of plains zebra, extinct since 1883.")
    result = rag("ingest", str(docs), "--defer-embedding")
    assert result.returncode == 0, result.stderr
    assert "rag embed" in result.stderr

    found = rag("query", "quagga zebra", "--mode", "bm25", "-k", "1")
    assert found.returncode == 0, found.stderr
    assert "zebra.txt" in found.stdout

    info = status(isolated_home)
    assert info["embedding"]["share"] == 0.0 and info["embedding"]["chunks"] == info["chunks"] > 0
    assert info["embedding"]["embedded_chunks"] == 0 and info["embedding"]["background"] is None
    assert info["groups"]["medium"]["embedded_share"] == 0.0

    embedded = rag("embed", "--json")
    assert embedded.returncode == 0, embedded.stderr
    report = json.loads(embedded.stdout)
    assert report["chunks"] == info["chunks"] and report["remaining"] == 0
    after = status(isolated_home)
    assert after["embedding"]["share"] == 1.0 and after["groups"]["medium"]["vectors_current"]
    assert after["groups"]["medium"]["vectors"] == after["embeddings"]


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_dense_and_hybrid_keep_unembedded_chunks_and_say_the_coverage(tmp_path, isolated_home, mode):
    docs = write_docs(tmp_path / "docs", 6)
    assert rag("ingest", str(docs)).returncode == 0
    (docs / "zebra.txt").write_text("The quagga was a subspecies of plains zebra, extinct since 1883.")
    assert rag("ingest", str(docs), "--defer-embedding").returncode == 0

    result = rag("query", "quagga zebra extinct", "--mode", mode, "-k", "3")
    assert result.returncode == 0, result.stderr
    assert "zebra.txt" in result.stdout.splitlines()[0]
    line = next(line for line in result.stderr.splitlines() if COVERAGE in line)
    assert "% of chunks; the rest by BM25 only" in line
    share = float(line.split(COVERAGE, 1)[1].split("%")[0])
    assert 0 < share < 100

    assert rag("embed").returncode == 0
    again = rag("query", "quagga zebra extinct", "--mode", mode, "-k", "3")
    assert "zebra.txt" in again.stdout.splitlines()[0] and COVERAGE not in again.stderr


def test_kill_9_while_embedding_then_rag_embed_embeds_every_chunk_exactly_once(tmp_path, isolated_home):
    docs = write_docs(tmp_path / "docs", 5)
    assert rag("ingest", str(docs)).returncode == 0
    write_docs(docs, 400, start=5, lines=2)
    # Batches of 32 chunks: the run spends most of its embedding between a first and a last
    # batch; held at a commit in between, it cannot embed the rest before the kill.
    process = subprocess.Popen(
        [sys.executable, "-m", "ragcli", "ingest", str(docs), "--batch-size", "32"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    start_embedded, _ = embedded_chunks(isolated_home)

    def embedding(conn) -> bool:
        embedded, total = conn.execute("SELECT count(embedding_id), count(*) FROM chunks").fetchone()
        return start_embedded < embedded < total

    killed_when(isolated_home, process, embedding, "a commit of some vectors but not all")

    # All text is committed: BM25 finds the last note; the vectors are not all there, and
    # status says so rather than `vectors_current true`; dense still answers, saying its share.
    info = status(isolated_home)
    assert info["documents"] == 405
    assert 0 < info["embedding"]["share"] < 1 and not info["groups"]["medium"]["vectors_current"]
    assert "note-0404.txt" in rag("query", "Note 404 observation", "--mode", "bm25", "-k", "3").stdout
    dense = rag("query", "Note 404 on honey bees", "--mode", "dense", "-k", "400")
    assert dense.returncode == 0 and COVERAGE in dense.stderr
    assert "note-0404.txt" in dense.stdout

    finished = rag("embed", "--json")
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)["remaining"] == 0
    with sqlite3.connect(isolated_home / "index.db") as conn:
        missing = conn.execute("SELECT count(*) FROM chunks WHERE embedding_id IS NULL").fetchone()[0]
        stored = conn.execute("SELECT count(*), count(DISTINCT hash) FROM embeddings").fetchone()
        texts = conn.execute("SELECT count(DISTINCT hash) FROM chunks").fetchone()[0]
        wrong = conn.execute(
            "SELECT count(*) FROM chunks c JOIN embeddings e ON e.id = c.embedding_id WHERE e.hash != c.hash"
        ).fetchone()[0]
    assert missing == 0 and wrong == 0
    assert stored == (texts, texts)  # one vector per distinct text: nothing embedded twice
    final = status(isolated_home)
    group = final["groups"]["medium"]
    assert final["embedding"]["share"] == 1.0 and group["vectors_current"]
    assert group["vectors"] == final["embeddings"] == texts


def test_embed_in_the_background_is_reported_by_status(tmp_path, isolated_home):
    docs = write_docs(tmp_path / "docs", 20)
    assert rag("ingest", str(docs), "--defer-embedding").returncode == 0
    started = rag("embed", "--background", "--json")
    assert started.returncode == 0, started.stderr
    job = json.loads(started.stdout)["background"]
    assert job["pid"] > 0 and Path(job["log"]) == isolated_home / "embed.log"
    seen = status(isolated_home)["embedding"]["background"]
    assert seen is None or seen["pid"] == job["pid"]  # None: it already finished
    deadline = time.time() + 300
    while status(isolated_home)["embedding"]["background"] and time.time() < deadline:
        time.sleep(0.2)
    info = status(isolated_home)
    assert info["embedding"]["background"] is None and info["embedding"]["share"] == 1.0
    assert "chunks given a vector" in (isolated_home / "embed.log").read_text()


def test_a_killed_background_job_is_not_reported_once_the_embedding_is_done(tmp_path, isolated_home):
    """A job killed with -9 left embed.pid behind; after a plain `rag embed` finished the work,
    status still listed it as an unfinished background job."""
    docs = write_docs(tmp_path / "docs", 4)
    assert rag("ingest", str(docs), "--defer-embedding").returncode == 0
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs, as a killed job's
    # a start time no process given this pid later can have: the dead job stays dead
    (isolated_home / "embed.pid").write_text(f"{dead.pid} 1\n", encoding="utf-8")
    stopped = status(isolated_home)["embedding"]
    assert stopped["background"]["running"] is False and stopped["share"] < 1.0
    assert rag("embed").returncode == 0
    done = status(isolated_home)["embedding"]
    assert done["share"] == 1.0 and done["background"] is None


def test_a_later_process_given_a_killed_jobs_pid_is_not_taken_for_the_job(tmp_path, isolated_home):
    """A job killed with -9 leaves embed.pid behind; when the system gives its pid to another
    process, status called that process the running job and `rag embed --background` would
    not start."""
    docs = write_docs(tmp_path / "docs", 4)
    assert rag("ingest", str(docs), "--defer-embedding").returncode == 0
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        # the killed job's pid, now another process's: its recorded start time is not this one's
        (isolated_home / "embed.pid").write_text(f"{stranger.pid} 1\n", encoding="utf-8")
        assert status(isolated_home)["embedding"]["background"]["running"] is False
        started = rag("embed", "--background", "--json")
        assert started.returncode == 0, started.stderr
        job = json.loads(started.stdout)["background"]
        assert job["pid"] != stranger.pid
        recorded = (isolated_home / "embed.pid").read_text(encoding="utf-8").split()
        assert recorded[0] == str(job["pid"]) and len(recorded) == 2  # its own start time
        deadline = time.time() + 300
        while status(isolated_home)["embedding"]["background"] and time.time() < deadline:
            time.sleep(0.2)
        assert status(isolated_home)["embedding"]["share"] == 1.0
    finally:
        stranger.kill()
        stranger.wait()


def test_an_index_without_any_vector_answers_dense_queries_by_bm25(tmp_path, isolated_home):
    docs = write_docs(tmp_path / "docs", 4)
    (docs / "zebra.txt").write_text("The quagga was a subspecies of plains zebra, extinct since 1883.")
    assert rag("ingest", str(docs), "--defer-embedding").returncode == 0
    result = rag("query", "quagga", "--mode", "dense", "-k", "2")
    assert result.returncode == 0, result.stderr
    assert "zebra.txt" in result.stdout and "dense covers 0% of chunks" in result.stderr
