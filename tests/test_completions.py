"""Completion scripts are generated from the app, committed, current, and complete real values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner import rag
from fakes import HashEmbedder
from ragcli.cli import app
from ragcli.cli.completions import FILE_NAMES, script
from ragcli.ingest.pipeline import ingest

COMPLETIONS = Path(__file__).resolve().parent.parent / "completions"


@pytest.mark.parametrize("shell", sorted(FILE_NAMES))
def test_committed_completions_are_current(shell):
    committed = (COMPLETIONS / FILE_NAMES[shell]).read_text()
    assert committed == script(shell), f"run: rag completions {shell} > completions/{FILE_NAMES[shell]}"
    assert CliRunner().invoke(app, ["completions", shell]).stdout == committed


def complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "_RAG_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    return rag(env=env).stdout.split()


def test_mode_completion_offers_the_modes():
    assert complete("rag query --mode ", 3) == ["bm25", "dense", "hybrid", "llm"]


def test_group_and_path_completion_read_the_current_index(tmp_path, isolated_home):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.txt").write_text("alpha text about bees")
    ingest(isolated_home, [docs], embedder=HashEmbedder(), group="fine")
    assert complete("rag query --group ", 3) == ["fine"]
    assert complete("rag rm ", 2) == [str((docs / "alpha.txt").resolve())]
