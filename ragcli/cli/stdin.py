"""Reading queries or questions from stdin: `rag query -`, `rag ask -`, or a pipe."""

from __future__ import annotations

import sys
from typing import Iterator, Optional

import typer


def stdin_lines(
    argument: Optional[str], *, metavar: str, plural: str, empty: Optional[str] = None
) -> Optional[Iterator[str]]:
    """None for a single argument, else the non-empty lines of stdin (`query_line`), read lazily.

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
    from ragcli.cli.stdin_batches import query_line

    return (query_line(line) for line in sys.stdin if query_line(line))


class OverLong:
    """Lines of stdin too long to search, each said on stderr and left out, so that one bad line
    does not cost the lines around it their answers; the command exits 2 once the rest are
    answered (`exit_if_any`)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.count = 0

    def allowed(self, line: str) -> bool:
        """Whether `line` is short enough; if not, it is reported (one line on stderr)."""
        from ragcli.cli.render import stderr_console
        from ragcli.errors import UsageError
        from ragcli.retrieval.search import check_query_length

        try:
            check_query_length(line, self.what)
        except UsageError as error:
            self.count += 1
            said = f"rag: error: {error} (that line is skipped)"
            stderr_console().print(said, markup=False, highlight=False)
            return False
        return True

    def exit_if_any(self) -> None:
        """Exit 2 (a usage error) when a line was left out."""
        if self.count:
            raise typer.Exit(2)
