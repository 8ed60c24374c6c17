"""Whole sentences at the edges of retrieved chunks.

A chunk is a window of tokens, so it usually starts and ends inside a sentence: quoted, its
first line reads "t remote set-head origin master will set ..." and its last "If the given
object refers". Before the answer step reads them, each hit's text is widened to the sentence
boundaries around its two edges, from the neighbouring chunks of its document (their windows
overlap or touch it): at most `EDGE_CHARS` characters a side, never across a page break (a
citation's page is counted from the text's first page), and only when the neighbour's text
agrees with the chunk's own where they overlap.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ragcli.text import sentence_spans
from ragcli.types import Chunk, Hit

# The most characters added before or after a chunk to complete its first or last sentence.
EDGE_CHARS = 400

# (id, start, end, text) of the chunks just before and after a chunk in its document's group
# (`Backend.neighbour_chunks`: two rows read through an index, whatever the document's size).
Row = tuple[int, int, int, str]
Neighbours = Callable[[int, str, int], Sequence[Row]]


def whole_sentences(hits: Sequence[Hit], neighbours: Neighbours) -> list[Hit]:
    """The hits with each chunk's text widened to whole sentences at both edges (see the module
    docstring)."""
    return [_widened(hit, neighbours(hit.chunk.doc_id, hit.chunk.group, hit.chunk.order)) for hit in hits]


def _widened(hit: Hit, rows: Sequence[Row]) -> Hit:
    chunk = hit.chunk
    before = next((row for row in rows if row[1] < chunk.start <= row[2]), None)
    after = next((row for row in rows if chunk.start < row[1] <= chunk.end < row[2]), None)
    head = _head(chunk, before) if before is not None else ""
    tail = _tail(chunk, after) if after is not None else ""
    if not head and not tail:
        return hit
    text = head + chunk.text + tail
    start, end = chunk.start - len(head), chunk.end + len(tail)
    return replace(hit, chunk=replace(chunk, text=text, start=start, end=end))


def _head(chunk: Chunk, before: Row) -> str:
    """The start of the sentence `chunk` opens inside of, from the chunk `before` it; empty when
    that sentence starts further back than the text at hand."""
    _, start, _, text = before
    if not _agree(text[chunk.start - start :], chunk.text):
        return ""
    cut = max(0, chunk.start - EDGE_CHARS - start)
    prefix = text[cut : chunk.start - start]
    at = len(prefix)
    span = _span_around(prefix + chunk.text, at)
    # A sentence starting where the text at hand starts may start further back, unless that is
    # the document's own start.
    if span is None or (not prefix[: span[0]].strip() and start + cut > 0):
        return ""
    head = (prefix + chunk.text)[span[0] : at]
    return "" if "\f" in head else head


def _tail(chunk: Chunk, after: Row) -> str:
    """The end of the sentence `chunk` stops inside of, from the chunk `after` it; empty when that
    sentence ends further on than the text at hand."""
    _, start, _, text = after
    if not _agree(chunk.text[start - chunk.start :], text):
        return ""
    suffix = text[chunk.end - start : chunk.end - start + EDGE_CHARS]
    joined = chunk.text + suffix
    at = len(chunk.text)
    span = _span_around(joined, at)
    if span is None or (span[1] == len(joined.rstrip()) and not joined.rstrip().endswith(_ENDS)):
        return ""
    tail = joined[at : span[1]]
    return "" if "\f" in tail else tail


# A text ending in one of these ends its last sentence.
_ENDS = (".", "!", "?", "\u3002", "\uff01", "\uff1f", '."', ".\u201d", '?"', '!"')


def _span_around(text: str, at: int) -> tuple[int, int] | None:
    """The sentence of `text` that `at` falls strictly inside of, if any."""
    return next(((s, e) for s, e in sentence_spans(text) if s < at < e), None)


def _agree(overlap: str, following: str) -> bool:
    """Whether a chunk's text from where the next one starts is that one's beginning (the two
    windows were cut from the same text)."""
    return following.startswith(overlap)
