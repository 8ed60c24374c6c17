"""Time per pipeline stage, reported through logging (`rag -v` shows it on stderr).

Library code never prints; a stage logs one INFO record when it ends, e.g.
`stage embed: 0.012 s`. Without a handler at INFO (no -v) this costs one clock read.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("ragcli.stages")


class stage:  # noqa: N801  (used like the function it was: `with stage("embed"):`)
    """Log how long the block took under `name` (and an optional detail).

    A plain class rather than `contextlib.contextmanager`: a warm BM25 query enters one, and the
    generator machinery cost a few percent of it.
    """

    __slots__ = ("name", "detail", "started")

    def __init__(self, name: str, detail: str = "") -> None:
        self.name, self.detail = name, detail

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        extra = f" ({self.detail})" if self.detail else ""
        log.info("stage %s: %.3f s%s", self.name, time.perf_counter() - self.started, extra)
