"""Queries from stdin in batches: every line already waiting, without waiting for more.

`rag query -` answers a batch with one call (`Index.search_many`), which for bm25 reads
every hit chunk in one go. A file or a fast producer fills batches of up to `limit`
lines; a producer that writes one query and waits for its answer (a coprocess, a chat
loop) gets a batch of one at once, so a pipe still streams. Where stdin cannot be polled
(no file descriptor, or no `select` for it), batches are single lines.
"""

from __future__ import annotations

import os
import select
from typing import IO, Iterator

BATCH = 256
BOM = "\ufeff"


def query_line(line: str) -> str:
    """A line of stdin as a query: stripped of spaces, a CR and a byte-order mark, which a file
    saved by a Windows editor starts with (and each file of a `cat a.txt b.txt` pipe)."""
    return line.strip().lstrip(BOM).strip()


def query_batches(stream: IO[str], limit: int = BATCH) -> Iterator[list[str]]:
    """The non-empty lines of `stream` as queries (`query_line`), grouped in batches of at most `limit`."""
    try:
        fd = stream.fileno()
        select.select([fd], [], [], 0)
    except (AttributeError, OSError, ValueError):  # not a real file (tests, embedding) or not pollable
        for line in stream:
            if query_line(line):
                yield [query_line(line)]
        return
    yield from _polled(stream, fd, limit)


def _polled(stream: IO[str], fd: int, limit: int) -> Iterator[list[str]]:
    """Read raw blocks from `fd`, decoded as `stream` would, and batch the complete lines."""
    import codecs

    decoder = codecs.getincrementaldecoder(stream.encoding or "utf-8")(stream.errors or "strict")
    pending = ""
    batch: list[str] = []
    while True:
        if batch and not _readable(fd):  # nothing more waiting: answer what we have
            yield from _split(batch, limit)
            batch = []
        block = os.read(fd, 1 << 16)
        pending += decoder.decode(block, final=not block)
        lines = pending.replace("\r", "\n").split("\n")  # universal newlines, like sys.stdin
        pending = lines.pop() if block else ""
        batch.extend(query_line(line) for line in lines if query_line(line))
        if not block:
            if query_line(pending):
                batch.append(query_line(pending))
            yield from _split(batch, limit)
            return
        while len(batch) >= limit:  # full batches now; the rest may grow with the next block
            yield batch[:limit]
            batch = batch[limit:]


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def _split(batch: list[str], limit: int) -> Iterator[list[str]]:
    for start in range(0, len(batch), limit):
        yield batch[start : start + limit]
