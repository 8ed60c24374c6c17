"""Every command has help with an example (sqlite-utils' test_docs spirit)."""

from __future__ import annotations

import os

import pytest
import typer
from typer.testing import CliRunner

from ragcli.cli import app


def command_paths(group, prefix=()):
    command = typer.main.get_command(group) if isinstance(group, typer.Typer) else group
    for name, sub in getattr(command, "commands", {}).items():
        path = (*prefix, name)
        if getattr(sub, "commands", None):
            yield from command_paths(sub, path)
        else:
            yield path


COMMANDS = sorted(command_paths(app))


def test_the_expected_commands_exist():
    names = {" ".join(path) for path in COMMANDS}
    assert {
        "ingest",
        "status",
        "ls",
        "rm",
        "query",
        "ask",
        "doctor",
        "completions",
        "config show",
        "config set",
        "config path",
    } <= names


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_has_an_example(path):
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "Example" in result.stdout, f"rag {' '.join(path)} --help shows no example"


def test_root_help_and_version():
    runner = CliRunner()
    assert "Example" in runner.invoke(app, ["--help"]).stdout
    assert runner.invoke(app, ["--version"]).stdout.startswith("rag ")


def _command(path):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_names_only_options_its_command_has(path):
    """An option's help that points to --format (``--json``: "= --format json") is on a command
    that takes --format."""
    command = _command(path)
    names = {name for param in command.params for name in getattr(param, "opts", ())}
    for param in command.params:
        if "--format" in (getattr(param, "help", None) or ""):
            assert "--format" in names, f"rag {' '.join(path)} {param.opts[0]} names --format"


def test_ingest_help_through_rag_does_not_offer_format():
    from runner import rag

    shown = rag("ingest", "--help", env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    assert "Print one JSON document on stdout." in shown.stdout
    assert "--format" not in shown.stdout, shown.stdout
