"""`start_worker`: the agent calls served by a real forked child over pipes (real default models)."""

from __future__ import annotations

import os
import signal

import pytest

from ragcli import open_index
from ragcli.mcp.tools import IndexTools
from ragcli.mcp.worker import can_fork, start_worker
from ragcli.errors import RagError

pytestmark = pytest.mark.skipif(not can_fork(), reason="the worker needs os.fork")


@pytest.fixture
def index_path(tmp_path, corpus_index):
    """This test's copy of an index of two fixture documents (a PDF and a Markdown file)."""
    return corpus_index("lighthouse-bread").copy(tmp_path / "idx")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_worker_answers_as_the_tools_in_this_process_do(index_path):
    worker = start_worker(open_index(index_path))
    local = IndexTools(open_index(index_path))
    progress = []
    try:
        found = worker.search(
            "Eddystone lighthouse", mode="hybrid", top_k=3, progress=lambda *p: progress.append(p)
        )
        assert found == local.search("Eddystone lighthouse", mode="hybrid", top_k=3)
        assert progress[-1] == (2, 2, f"{len(found['hits'])} hits")
        chunk = worker.get(chunk_id=found["hits"][0]["chunk_id"])
        assert chunk["text"] == found["hits"][0]["text"]
        assert worker.status()["documents"] == 2
        with pytest.raises(RagError, match="filters.colour: unknown filter key"):
            worker.search("tea", filters={"colour": "red"})
        assert worker.search("bread dough", mode="bm25")["hits"]  # carries on after an error
    finally:
        local.close()
        worker.close()
    assert gone(worker.pid)  # reaped, not left behind


def test_missing_index_is_the_clis_error(tmp_path):
    missing = tmp_path / "nothing-here"
    worker = start_worker(open_index(missing))
    try:
        with pytest.raises(RagError, match=f"no index at {missing}"):
            worker.status()
    finally:
        worker.close()


def test_a_dead_worker_is_an_error_not_a_hang_and_later_calls_are_answered(index_path):
    worker = start_worker(open_index(index_path))
    try:
        os.kill(worker.pid, signal.SIGKILL)
        with pytest.raises(RagError, match="ended unexpectedly"):
            worker.status()
        assert worker.status()["documents"] >= 1  # answered in this process from now on
    finally:
        worker.close()
    assert gone(worker.pid)
