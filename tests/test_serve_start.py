"""`rag serve` starting up, as a user at a shell sees it: the real command in a subprocess,
its exit code and its stderr; a real socket holds a port, real `rag ingest` builds the index."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx2 as httpx  # the HTTP client the MCP SDK brings
import pytest
from runner import rag

from serving import DOCS, build_index, clean_env, running_server


@pytest.fixture
def env(tmp_path, model_cache_dir):
    return clean_env(tmp_path / "home", model_cache_dir, RAG_MODE="bm25")


def server_log(env: dict[str, str], base: str) -> str:
    """What the server started by `running_server` at `base` wrote so far."""
    port = base.rsplit(":", 1)[1]
    return (Path(env["XDG_DATA_HOME"]).parent / f"serve-{port}.log").read_text()


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


def test_a_missing_index_is_named_at_start_and_served_once_ingested(tmp_path, env):
    """The server warns, then serves what another process's `rag ingest` writes later."""
    index = tmp_path / "index"  # where build_index puts it
    with running_server(env, "--index", str(index)) as base:
        lines = server_log(env, base).splitlines()
        assert lines[0] == (
            f"rag serve: warning: no index at {index} yet: every request but /health fails until "
            f"`rag ingest DIR --index {index}` (or pass --index PATH)"
        )
        assert lines[1].startswith(f"rag serve: {index} on http://127.0.0.1:")
        assert httpx.get(f"{base}/status").status_code == 404
        build_index(tmp_path, env)
        status = httpx.get(f"{base}/status", timeout=60)
        assert status.status_code == 200 and status.json()["documents"] == len(DOCS)


def test_a_documents_folder_as_index_is_named_at_start(tmp_path, env):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nThe kettle whistles at 100 °C.\n")
    with running_server(env, "--index", str(docs)) as base:
        warning = server_log(env, base).splitlines()[0]
    assert warning.startswith(f"rag serve: warning: {docs} holds files but no index (a documents folder?)")
    assert f"`rag ingest {docs} --index INDEX`" in warning


def test_mcp_names_a_documents_folder_too(tmp_path, env):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n")
    done = rag("mcp", "--index", str(docs), env=env, stdin="", timeout=120)
    assert f"rag mcp: warning: {docs} holds files but no index" in done.stderr
