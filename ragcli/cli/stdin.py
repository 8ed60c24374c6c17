"""Reading queries or questions from stdin: `rag query -`, `rag ask -`, or a pipe."""

from __future__ import annotations

import sys
from typing import Iterator, Optional

import typer


def stdin_lines(
    argument: Optional[str], *, metavar: str, plural: str, empty: Optional[str] = None
) -> Optional[Iterator[str]]:
    """None for a single argument, else the non-empty lines of stdin (stripped), read lazily.

    An absent argument reads stdin unless stdin is a terminal (a usage error, exit 2, then);
    '-' reads it always.

    Args:
        argument: the QUERY or QUESTION argument as given (None when absent).
        metavar: its name in messages, e.g. "QUERY".
        plural: what the lines are, e.g. "queries".
        empty: the usage error for a blank argument (None: a blank argument is passed on).
    """
    if argument not in (None, "-"):
        if empty is not None and not str(argument).strip():
            raise typer.BadParameter(empty, param_hint=metavar)
        return None
    if argument is None and sys.stdin.isatty():
        raise typer.BadParameter(
            f"give a {metavar}, or '-' / a pipe to read {plural} from stdin", param_hint=metavar
        )
    return (line.strip() for line in sys.stdin if line.strip())
