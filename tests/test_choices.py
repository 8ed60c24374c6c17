"""Every choice list is declared once, in `ragcli.choices`, and the CLI and the library use it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ragcli
from ragcli import choices
from runner import rag

PACKAGE = Path(ragcli.__file__).parent


def test_cli_enums_are_the_choice_lists():
    from ragcli.cli.ask import Rewrite
    from ragcli.cli.ingest import SplitBy
    from ragcli.cli.options import Fusion, Mode, Rerank

    assert tuple(member.value for member in Fusion) == choices.FUSIONS
    assert tuple(member.value for member in Mode) == choices.MODES
    assert tuple(member.value for member in Rerank) == choices.RERANKERS
    assert tuple(member.value for member in Rewrite) == choices.REWRITES
    assert tuple(member.value for member in SplitBy) == choices.SPLIT_BY


def test_the_library_validates_against_the_same_lists():
    from ragcli.answer import options
    from ragcli.retrieval import fusion, search

    assert options.ANSWER_STYLES is choices.ANSWER_STYLES
    assert search.FUSIONS is choices.FUSIONS
    assert fusion.DEFAULT_FUSION == search.DEFAULT_FUSION == choices.DEFAULT_FUSION


@pytest.mark.parametrize("name", ["ANSWER_STYLES", "FUSIONS", "MODES", "RERANKERS", "REWRITES", "SPLIT_BY"])
def test_no_other_module_assigns_a_choice_list(name):
    """A list declared twice drifts; the agent tools use the same lists."""
    assigned = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "choices.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
                if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    assigned.append(str(path.relative_to(PACKAGE)))
    assert assigned == [], assigned


def test_help_lists_the_choices():
    """The real `rag` shows the answer styles and fusions from `ragcli.choices` in --help."""
    shown = rag("ask", "--help")
    assert shown.returncode == 0, shown.stderr
    for value in (*choices.ANSWER_STYLES, *choices.FUSIONS):
        assert value in shown.stdout


def test_answer_styles_in_help_are_the_kept_ones_and_old_names_still_work():
    """--answer-style lists auto, evidence and generative; extractive/sentence/choice are hidden aliases."""
    from typer.testing import CliRunner

    from ragcli.cli import app

    shown = rag("ask", "--help")
    assert "[auto|evidence|generative]" in " ".join(shown.stdout.split())
    for old in choices.STYLE_ALIASES:
        assert old not in shown.stdout.split("--answer-style")[1].split("--reader")[0]
    result = CliRunner().invoke(app, ["ask", "--answer-style", "poem", "x"])
    assert result.exit_code == 2 and "choose one of auto, evidence" in result.output
