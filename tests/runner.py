"""Run `python -m ragcli` in a subprocess, as scripts do: real exit codes, stdout and stderr apart."""

from __future__ import annotations

import os
import subprocess
import sys


def rag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragcli", *args],
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=600,
    )
