"""Every command has help with an example (sqlite-utils' test_docs spirit)."""

from __future__ import annotations

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
