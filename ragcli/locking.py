"""Exclusive locks between processes on one machine (fcntl.flock on a lock file).

`exclusive` waits as long as it takes (a migration is short). `index_writer` serialises the
processes that write one index (ingest, rm): the second one says it is waiting, through a
callback the CLI prints, and gives up with `IndexBusy` after a timeout.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Callable, Iterator

from ragcli.errors import IndexBusy

WRITE_LOCK = "write.lock"
DEFAULT_TIMEOUT = 600.0
_POLL = 0.1


@contextlib.contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_file` (created if missing); others wait their turn."""
    with Path(lock_file).open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def index_writer(
    index: Path, *, timeout: float = DEFAULT_TIMEOUT, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the index's write lock; wait (telling `on_wait` once) up to `timeout` seconds.

    The lock file lives inside the index folder. `--rebuild` swaps folders, so after taking
    the lock the file is checked to still be the one at the path; if not, it is taken again.

    Raises:
        IndexBusy: another process held the lock for longer than `timeout`.
    """
    lock_file = index / WRITE_LOCK
    deadline = time.monotonic() + timeout
    told = False
    while True:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if _acquire(fd, deadline):
                if _same_file(fd, lock_file):
                    break
                os.close(fd)
                continue
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        if time.monotonic() >= deadline:
            raise IndexBusy(
                f"index busy: another rag process has been writing to {index} for over "
                f"{timeout:g} s; wait for it to finish (or raise --lock-timeout) and retry"
            )
        if not told and on_wait:
            on_wait(f"index busy: another rag process is writing to {index}; waiting (up to {timeout:g} s)…")
            told = True
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _acquire(fd: int, deadline: float) -> bool:
    """Try the lock; when it is taken, sleep one poll interval and answer False."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        if time.monotonic() < deadline:
            time.sleep(_POLL)
        return False


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False
