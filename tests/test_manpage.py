"""man/rag.1 is generated from the app, committed, current, and renders with man(1)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ragcli.cli.manpage import render

PAGE = Path(__file__).resolve().parent.parent / "man" / "rag.1"


def test_committed_man_page_is_current():
    assert PAGE.read_text() == render(), "run: python -m ragcli.cli.manpage > man/rag.1"


def test_man_page_covers_every_command_and_option():
    from typer.testing import CliRunner

    from ragcli.cli import app

    text = render()
    for command in (
        "rag ingest",
        "rag status",
        "rag ls",
        "rag rm",
        "rag config show",
        "rag config set",
        "rag doctor",
        "rag completions",
        "rag query",
        "rag ask",
        "rag eval retrieval",
        "rag eval answers",
        "rag eval generate",
    ):
        assert f'.SS "{command}"' in text
    help_text = CliRunner().invoke(app, ["query", "--help"], terminal_width=1000).stdout
    for option in ("--format", "--min-score", "--explain", "--top-k"):
        assert option in help_text and option.replace("-", "\\-") in text
    assert "--n-ctx" not in text and "\\-\\-n\\-ctx" not in text  # hidden alias stays hidden


@pytest.mark.skipif(shutil.which("man") is None, reason="man(1) is not installed")
def test_man_renders_the_page_without_warnings():
    result = subprocess.run(
        ["man", "--warnings", "-l", str(PAGE)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    assert result.returncode == 0 and "RAG(1)" in result.stdout
    assert "rag query" in result.stdout
    assert result.stderr == "", result.stderr
