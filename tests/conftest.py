"""Shared fixtures: every test gets its own index home; the model cache is shared per session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# The Milvus tests load gRPC into this process; its fork handlers then run in every child that
# pexpect forks (before the exec) and can kill it with an epoll error. Read when gRPC is imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="session")
def model_cache_dir(tmp_path_factory) -> Path:
    """One ONNX export cache for the whole run: exporting is slow, reusing it is safe."""
    return tmp_path_factory.mktemp("model-cache")


def shared_model_files(cache: Path, shared: Path) -> Path:
    """A per-test cache dir whose model exports (slow to make) point at the session's.

    Everything else under the cache (e.g. the indexes `rag eval` builds) stays per test.
    """
    cache.mkdir(parents=True, exist_ok=True)
    for sub in ("onnx", "fingerprints"):
        (shared / sub).mkdir(exist_ok=True)
        (cache / sub).symlink_to(shared / sub, target_is_directory=True)
    return cache


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch, model_cache_dir) -> Path:
    """Point every index, config and cache location at this test's own folder."""
    index = tmp_path / "index"
    monkeypatch.setenv("RAG_INDEX", str(index))
    monkeypatch.setenv("RAG_CACHE_DIR", str(shared_model_files(tmp_path / "cache", model_cache_dir)))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("RAG_EMBED_MODEL", "RAG_MODEL", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return index


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def fake_embedder():
    from fakes import HashEmbedder

    return HashEmbedder()


@pytest.fixture
def bowl_index(tmp_path, isolated_home, monkeypatch):
    """An index of the BOWL passage, chunked by sentences, with a hash embedder."""
    from fakes import BOWL, HashEmbedder
    from ragcli.ingest.pipeline import ingest
    from ragcli.types import ChunkSettings

    fake = HashEmbedder(dimension=512)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bowl.txt").write_text(BOWL)
    ingest(isolated_home, [root], embedder=fake, group="medium", chunking=ChunkSettings("sentence", 3, 0))
    return isolated_home
