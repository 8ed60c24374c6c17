"""Shared fixtures: every test gets its own index home; the model cache is shared per session."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# The Milvus tests load gRPC into this process; its fork handlers then run in every child that
# pexpect forks (before the exec) and can kill it with an epoll error. Read when gRPC is imported.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# The corpora tests index, by name: (fixtures folder, only these files, leaving out these).
# A whole folder is indexed where it is (its paths are the repository's); a part, from a copy.
CORPORA: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # every readable fixture document: English, Chinese, PDF, DOCX, HTML
    "docs": ("docs", (), ("broken",)),
    "three-docs": ("docs", ("lighthouses.pdf", "bread_baking.md", "chinese_tea.txt"), ()),
    "lighthouse-bread": ("docs", ("lighthouses.pdf", "bread_baking.md"), ()),
    "sample": ("sample", (), ()),  # every format of the README's examples, a scan among them
    "office": ("sample", ("coffee_houses.pptx", "tea_harvests.xlsx"), ()),
}


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker more than the cores, at most 8. Most tests wait on a child `rag`
    (a model loading, a watcher, a killed process restarting), so a spare worker keeps the
    cores busy; past 8, the workers' children (each with its models) cost more memory than
    they save time."""
    return min((os.cpu_count() or 1) + 1, 8)


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


# A terminal's size comes from the terminal (a test's pty), not from the environment the suite
# runs in (pytest-xdist's workers set COLUMNS=80, which rich would obey).
TERMINAL_SIZE = ("COLUMNS", "LINES")


def child_environ(home: Path, model_cache_dir: Path) -> dict[str, str]:
    """The environment of a `rag` child a module- or session-wide fixture starts (before any
    test's `isolated_home`): no RAG_* settings, config and cache under `home`, models shared."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("RAG_") and key not in TERMINAL_SIZE
    }
    environ.update(
        RAG_CACHE_DIR=str(shared_model_files(home / "cache", model_cache_dir)),
        RAG_CONFIG=str(home / "none.toml"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        HF_HUB_OFFLINE="1",
    )
    return environ


def ingested_home(home: Path, model_cache_dir: Path, docs: Path) -> dict[str, str]:
    """`child_environ` with its index under `home`, after the real `rag ingest` of `docs`."""
    from runner import rag

    environ = child_environ(home, model_cache_dir) | {"RAG_INDEX": str(home / "index")}
    done = rag("ingest", str(docs), env=environ)
    assert done.returncode == 0, done.stderr
    return environ


def ingested_pages(
    tmp_path_factory, model_cache_dir: Path, name: str, pages: dict[str, str]
) -> dict[str, str]:
    """`ingested_home` of a new folder holding `pages` (file name -> text)."""
    docs = tmp_path_factory.mktemp(f"{name}-docs")
    for file_name, text in pages.items():
        (docs / file_name).write_text(text, encoding="utf-8")
    return ingested_home(tmp_path_factory.mktemp(f"{name}-home"), model_cache_dir, docs)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch, model_cache_dir) -> Path:
    """Point every index, config and cache location at this test's own folder."""
    index = tmp_path / "index"
    monkeypatch.setenv("RAG_INDEX", str(index))
    monkeypatch.setenv("RAG_CACHE_DIR", str(shared_model_files(tmp_path / "cache", model_cache_dir)))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("RAG_EMBED_MODEL", "RAG_MODEL", "NO_COLOR", *TERMINAL_SIZE):
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


@dataclass(frozen=True)
class IndexedCorpus:
    """A corpus folder and its index, built once per session by the real `rag ingest` with the
    packaged embedding model. Shared by every test that names the corpus: read it only; a test
    that writes (ingest, rm, an answer it caches) works on `copy`."""

    docs: Path
    index: Path

    def copy(self, to: Path) -> Path:
        """A private copy of the index at `to` (its documents stay where the corpus has them)."""
        shutil.copytree(self.index, to)
        return to


@pytest.fixture(scope="session")
def corpus_index(tmp_path_factory, model_cache_dir) -> Callable[[str], IndexedCorpus]:
    """`corpus_index(name)`: the `IndexedCorpus` of a `CORPORA` name, built on first use."""
    from runner import rag

    built: dict[str, IndexedCorpus] = {}

    def index_of(name: str) -> IndexedCorpus:
        if name not in built:
            built[name] = _build_corpus(tmp_path_factory.mktemp(f"corpus-{name}"), name, model_cache_dir, rag)
        return built[name]

    return index_of


def _build_corpus(home: Path, name: str, model_cache_dir: Path, rag) -> IndexedCorpus:
    folder, only, leaving_out = CORPORA[name]
    docs = FIXTURES / folder
    if leaving_out:
        docs = Path(shutil.copytree(docs, home / "docs", ignore=shutil.ignore_patterns(*leaving_out)))
    elif only:
        (home / "docs").mkdir()
        for file_name in only:
            shutil.copy(docs / file_name, home / "docs" / file_name)
        docs = home / "docs"
    done = rag("ingest", str(docs), "--index", str(home / "index"), env=child_environ(home, model_cache_dir))
    assert done.returncode == 0, done.stderr
    return IndexedCorpus(docs, home / "index")
