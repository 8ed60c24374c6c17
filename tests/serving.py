"""`rag serve` in a subprocess on a free loopback port, for the HTTP and browser tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from runner import rag

import httpx2 as httpx  # the HTTP client the MCP SDK brings

from conftest import FIXTURES, shared_model_files

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("lighthouses.pdf", "bread_baking.md", "chinese_tea.txt")


def clean_env(home: Path, model_cache_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a child `rag`: this worktree's code, its own config and cache."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("RAG_")}
    environ.update(
        PYTHONPATH=str(ROOT),
        RAG_CACHE_DIR=str(shared_model_files(home / "cache", model_cache_dir)),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        HF_HUB_OFFLINE="1",
        **extra,
    )
    return environ


def rag_child(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = rag(*args, env=env)
    assert done.returncode == 0, done.stderr
    return done


def build_index(base: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """An index of three fixture documents (a PDF among them), by the real `rag ingest`."""
    docs, index = base / "docs", base / "index"
    docs.mkdir(parents=True)
    for name in DOCS:
        shutil.copy(FIXTURES / "docs" / name, docs / name)
    rag_child(env, "ingest", str(docs), "--index", str(index))
    return docs, index


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_server(env: dict[str, str], *args: str, token: str | None = None) -> Iterator[str]:
    """Start `rag serve ARGS` and yield its base URL once /health answers; stop it after.

    The port is free when chosen, but another process (another test worker's server, or any
    outgoing connection's local port) may take it before the child binds it: then the child
    says so and exits 1, and another port is tried."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    for attempt in range(5):
        port = free_port()
        log_path = Path(env["XDG_DATA_HOME"]).parent / f"serve-{port}.log"
        log = open(log_path, "w")
        child = subprocess.Popen(
            [sys.executable, "-m", "ragcli", "serve", "--port", str(port), *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(base, child, headers)
        except AssertionError:
            if child.poll() is None:
                child.kill()
            child.wait()
            log.close()
            if attempt < 4 and f"port {port} on 127.0.0.1 is already in use" in log_path.read_text():
                continue
            raise
        break
    try:
        yield base
    finally:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
        log.close()


def wait_until_up(base: str, child: subprocess.Popen, headers: dict[str, str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise AssertionError(f"rag serve exited with {child.returncode}")
        try:
            if httpx.get(f"{base}/health", headers=headers, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("rag serve did not come up in 120 s")


def served_fixtures() -> tuple[Any, Any]:
    """The module-scoped fixtures `setup` (the fixture documents plus a symlink to a file
    outside their folder, ingested by the real `rag`) and `server` (the plain server on it:
    loopback, no token, no waiting answers), for a test module to bind as
    ``setup, server = served_fixtures()``."""

    @pytest.fixture(scope="module")
    def setup(tmp_path_factory, model_cache_dir):
        base = tmp_path_factory.mktemp("serve")
        outside = base / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("the secret lighthouse keeper password is hunter2\n")
        env = clean_env(base / "home", model_cache_dir, RAG_MODE="bm25")
        docs, index = base / "docs", base / "index"
        docs.mkdir()
        (docs / "link.txt").symlink_to(outside / "secret.txt")  # ingested, but points out of the root
        for name in DOCS:
            shutil.copy(FIXTURES / "docs" / name, docs / name)
        rag_child(env, "ingest", str(docs), "--index", str(index))
        return {"env": env, "docs": docs, "index": index, "outside": outside}

    @pytest.fixture(scope="module")
    def server(setup):
        with running_server(setup["env"], "--index", str(setup["index"]), "--queue", "0") as base:
            yield base

    return setup, server


def post(base: str, path: str, body, **kwargs) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, timeout=120, **kwargs)


def cli_json(setup: dict, *args: str) -> dict:
    return json.loads(rag_child(setup["env"], *args, "--index", str(setup["index"]), "--json").stdout)
