"""Run `python -m ragcli` in a subprocess, as scripts do: real exit codes, stdout and stderr apart.

The one subprocess runner of the tests; keep private runners only for what this one cannot
do (a pseudo-terminal, output into files or a closed pipe, arguments that are not UTF-8).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Mapping, Sequence


def rag(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 600,
    wrapper: Sequence[str] = (),
) -> subprocess.CompletedProcess:
    """`rag ARGS` run to its end, its output captured as text.

    Args:
        env: the child's whole environment (default: this process's); to add a variable,
            pass ``{**os.environ, "NAME": "value"}``.
        stdin: text written to its standard input (default: it inherits this process's).
        timeout: seconds before the child is killed and the test fails.
        wrapper: a command the child runs under (e.g. `setpriv` dropping root's file access).
    """
    return subprocess.run(
        [*wrapper, sys.executable, "-m", "ragcli", *args],
        env=dict(os.environ if env is None else env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
