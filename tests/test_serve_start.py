"""`rag serve` starting up, as a user at a shell sees it: the real command in a subprocess,
its exit code and its stderr; a real socket holds a port, real `rag ingest` builds the index."""

from __future__ import annotations

import socket

import pytest
from runner import rag

from serving import clean_env


@pytest.fixture
def env(tmp_path, model_cache_dir):
    return clean_env(tmp_path / "home", model_cache_dir, RAG_MODE="bm25")


def test_a_port_in_use_is_one_error_line_and_exit_1(tmp_path, env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = rag("serve", "--port", str(port), "--index", str(tmp_path / "idx"), env=env, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"rag: error: port {port} on 127.0.0.1 is already in use: choose another with --port"
    ]
    assert done.stdout == ""


def test_a_host_that_is_not_this_machine_is_one_error_line(tmp_path, env):
    index = str(tmp_path / "idx")
    done = rag("serve", "--host", "192.0.2.1", "--token", "t", "--index", index, env=env, timeout=120)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "rag: error: --host 192.0.2.1 is not an address of this machine: pass one of its addresses, "
        "or 127.0.0.1"
    ]
