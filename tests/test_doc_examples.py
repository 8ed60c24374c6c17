"""Every ```bash example of the README and of the guide pages runs, through the real `rag`.

The sample folder is ingested once into a temporary index; each block then runs in `bash -e -o
pipefail` on its own copy of that index (so `rag rm` in one block changes nothing for the next),
from a scratch folder where `fixtures/` points at the repository's fixtures. A block preceded by
`<!-- not-run: reason -->` is skipped (it needs a network, a display, a server or runs forever),
and so are ```console blocks, which show a session with its output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
BLOCK = re.compile(r"(?:<!--\s*(not-run:[^>]*)-->\s*\n)?```bash\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[str, str, str | None]]:
    """(page:line, script, the not-run reason or None) for every ```bash block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start(2))
            found.append((f"{page.relative_to(ROOT)}:{line}", match.group(2), match.group(1)))
    return found


EXAMPLES = examples()
EXAMPLE_TIMEOUT = 300  # seconds for one block; a block that never ends must be marked not-run


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory, model_cache_dir, corpus_index) -> Path:
    """A home with fixtures/sample's index (ingested once with the real models) and a cache."""
    from conftest import shared_model_files

    home = tmp_path_factory.mktemp("doc-examples")
    shared_model_files(home / "cache", model_cache_dir)
    corpus_index("sample").copy(home / "index")
    return home


def rag_executable() -> str:
    return shutil.which("rag") or "rag"


def environment(home: Path, index: Path, cache: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DISPLAY", "WAYLAND_DISPLAY", "RAG_EMBED_MODEL", "RAG_MODEL", "RAG_CONFIG")
    }
    env.update(
        RAG_INDEX=str(index),
        RAG_CACHE_DIR=str(cache),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        HF_HUB_OFFLINE="1",
        COLUMNS="120",
    )
    return env


def test_the_readme_and_guides_have_examples_and_few_are_skipped():
    assert len(EXAMPLES) >= 20
    skipped = [where for where, _, reason in EXAMPLES if reason]
    assert len(skipped) <= len(EXAMPLES) // 2, skipped


# A block that installs or removes packages would change the Python the suite itself runs on
# (and, run beside another test, pull a module from under it).
_CHANGES_PACKAGES = re.compile(r"^\s*(?:python\d*\s+-m\s+)?(?:pip|pipx|uv)\b", flags=re.MULTILINE)


def test_no_runnable_example_installs_or_removes_packages():
    runnable = [
        where for where, script, reason in EXAMPLES if reason is None and _CHANGES_PACKAGES.search(script)
    ]
    assert not runnable, f"mark these <!-- not-run: changes the Python environment -->: {runnable}"


@pytest.mark.parametrize(
    "where, script",
    [(where, script) for where, script, reason in EXAMPLES if reason is None],
    ids=[where for where, _, reason in EXAMPLES if reason is None],
)
def test_example_runs(where, script, sample_index, tmp_path):
    shutil.copytree(sample_index / "index", tmp_path / "index")
    work = tmp_path / "work"
    work.mkdir()
    (work / "fixtures").symlink_to(ROOT / "fixtures", target_is_directory=True)
    env = environment(tmp_path, tmp_path / "index", sample_index / "cache")
    try:
        result = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=EXAMPLE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"{where} ran past {EXAMPLE_TIMEOUT} s: a server or a watcher? mark it <!-- not-run: reason -->"
        )
    output = f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    assert result.returncode == 0, f"{where} failed (exit {result.returncode}):\n{script}\n{output}"
