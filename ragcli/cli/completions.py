"""`rag completions bash|zsh|fish`: shell completion scripts generated from the app itself.

The scripts are thin shims: the shell calls `rag` back with `_RAG_COMPLETE` set, and the
app answers from its own options, so they never go stale for option names; the committed
copies in `completions/` are checked against this output by a test.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

COMPLETE_VAR = "_RAG_COMPLETE"  # set when the shell asks `rag` for completions

FILE_NAMES = {"bash": "rag.bash", "zsh": "_rag", "fish": "rag.fish"}


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def enable() -> None:
    """Register typer's completion classes (off because the app hides --install-completion).

    `main` calls this only when the shell asks for completions (`COMPLETE_VAR` is set).
    """
    from typer._completion_classes import completion_init

    completion_init()


def script(shell: str) -> str:
    from typer._completion_shared import get_completion_script

    return get_completion_script(prog_name="rag", complete_var=COMPLETE_VAR, shell=shell).strip() + "\n"


def completions(
    shell: Annotated[Optional[Shell], typer.Argument(help="bash, zsh or fish.", show_default=False)] = None,
) -> None:
    """Print the completion script for a shell.

    Example: rag completions bash > ~/.local/share/bash-completion/completions/rag
    """
    if shell is None:  # click's own message for a missing choice runs over four lines
        choices = ", ".join(choice.value for choice in Shell)
        raise typer.BadParameter(f"give the shell to complete for: {choices}", param_hint="SHELL")
    typer.echo(script(shell.value), nl=False)


def group_names(incomplete: str, index: Path | None = None) -> list[str]:
    """Completion for --group: the groups of the index named on the line (else the default)."""
    from ragcli.store.status import group_names as read_groups

    return [name for name in _index_values(read_groups, index) if name.startswith(incomplete)]


def indexed_paths(incomplete: str, index: Path | None = None) -> list[str]:
    """Completion for `rag rm`: the indexed document paths of the index named on the line."""
    from ragcli.store.status import document_paths

    return [
        path
        for path in _index_values(document_paths, index)
        if path.startswith(incomplete) or Path(path).name.startswith(incomplete)
    ]


def config_keys(incomplete: str) -> list[str]:
    """Completion for `rag config set`: the setting names."""
    from ragcli.config import KEYS

    return [key for key in KEYS if key.startswith(incomplete)]


def _index_values(reader: Callable[[Path], list[str]], index: Path | None = None) -> list[str]:
    """What `reader` reads from the index named on the line; [] on any failure."""
    from ragcli.config import load_settings

    try:
        return reader(load_settings(index=index).index)
    except Exception:  # completion must never print a traceback into the shell
        return []
