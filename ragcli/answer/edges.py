"""Whole sentences at the edges of retrieved chunks.

A chunk is a window of tokens, so it usually starts and ends inside a sentence: quoted, its
first line reads "t remote set-head origin master will set ..." and its last "If the given
object refers". Before the answer step reads them, each hit's text is widened to the sentence
boundaries around its two edges, from the neighbouring chunks of its document (their windows
overlap or touch it): at most `EDGE_CHARS` characters a side, never across a page break (a
citation's page is counted from the text's first page), and only when the neighbour's text
agrees with the chunk's own where they overlap. A chunk whose first sentence opens by pointing
back ("This behavior is controlled by ...", `refers_back`) gets the sentence before it too: a
chunk boundary often falls between a statement and the sentence that goes on about it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ragcli.answer.completion import is_title, refers_back
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
    joined = prefix + chunk.text
    span = _span_around(joined, at)
    # A sentence starting where the text at hand starts may start further back, unless that is
    # the document's own start.
    whole = start + cut == 0
    if span is not None and not prefix[: span[0]].strip() and not whole:
        return ""
    first = span[0] if span is not None else at
    head = joined[_leaned_on(joined, first, whole) : at]
    return "" if "\f" in head else head


def _leaned_on(text: str, first: int, whole: bool) -> int:
    """Where the text at hand starts: at `first`, or one sentence back when the sentence at
    `first` opens by pointing back ("This behavior is controlled by ...": the statement it
    points at ends the chunk before). `whole`: `text` starts at the document's own start, so
    its first sentence is whole."""
    spans = sentence_spans(text)
    opening = next(((s, e) for s, e in spans if s >= first), None)
    if opening is None or not refers_back(text[opening[0] : opening[1]]):
        return first
    previous = next(((s, e) for s, e in reversed(spans) if e <= first), None)
    if previous is None or (not text[: previous[0]].strip() and not whole):
        return first  # that sentence may start further back than the text at hand
    if is_title(text[previous[0] : previous[1]]):
        return first  # a heading: the sentence points back at nothing before it
    return previous[0]


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


def read_on(hits: Sequence[Hit], neighbours: Neighbours, count: int) -> list[Hit]:
    """The hits, the first `count` of them each read on into the chunks after it in its document
    (`READ_ON_CHARS` more characters at most, up to a page break): a question asking for several
    things is answered by an enumeration (a man page's fields, a reference page's entries), which
    often runs on past the end of the chunk that matched its first items."""
    return [_read_on(hit, neighbours) if rank < count else hit for rank, hit in enumerate(hits)]


# Characters a passage is read on by, past its chunk's end, for a question asking for several things.
READ_ON_CHARS = 1500


def _read_on(hit: Hit, neighbours: Neighbours) -> Hit:
    chunk, order, more = hit.chunk, hit.chunk.order, ""
    while len(more) < READ_ON_CHARS and "\f" not in chunk.text + more:
        end = chunk.end + len(more)
        rows = neighbours(chunk.doc_id, chunk.group, order)
        after = next((row for row in rows if row[1] <= end < row[2] and row[1] > chunk.start), None)
        if after is None:
            break
        more += after[3][end - after[1] :]
        order += 1
    truncated = "\f" not in more and len(more) >= READ_ON_CHARS  # its last sentence may be cut
    more = more.split("\f")[0]
    if truncated or len(more) > READ_ON_CHARS:  # to the last whole sentence within the limit
        spans = sentence_spans(more)[:-1] if truncated else sentence_spans(more)
        more = more[: max((end for _, end in spans if end <= READ_ON_CHARS), default=0)]
    if not more:
        return hit
    return replace(hit, chunk=replace(chunk, text=chunk.text + more, end=chunk.end + len(more)))
