"""Time per pipeline stage, reported through logging (`rag -v` shows it on stderr).

Library code never prints; a stage logs one INFO record when it ends, e.g.
`stage embed: 0.012 s`. Without a handler at INFO (no -v) this costs one clock read.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Iterator

log = logging.getLogger("ragcli.stages")


@contextmanager
def stage(name: str, detail: str = "") -> Iterator[None]:
    """Log how long the block took under `name` (and an optional detail)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        extra = f" ({detail})" if detail else ""
        log.info("stage %s: %.3f s%s", name, time.perf_counter() - started, extra)
