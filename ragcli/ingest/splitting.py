"""Cut a document text into overlapping windows of pages, passages, sentences, words or tokens.

The semantics follow AdalFlow's ``TextSplitter`` (SylphAI-Inc/AdalFlow,
``adalflow/adalflow/components/data_process/text_splitter.py``):

1. The text is cut into *units*. ``page``, ``passage`` and ``word`` use ``str.split`` on
   ``"\\f"``, ``"\\n\\n"`` and ``" "``; each unit keeps the separator that followed it, so
   ``"Hello, world!"`` by word is ``["Hello, ", "world!"]``. Empty units (two separators in a
   row) are kept and counted, exactly as ``str.split`` produces them.
2. A window of ``chunk_size`` units slides with step ``chunk_size - chunk_overlap``. The first
   window that reaches or passes the last unit stops the loop and becomes the final chunk,
   running from its start to the end of the text (AdalFlow's last-window rule).

Two deliberate departures from AdalFlow:

- ``sentence``: AdalFlow splits on every ``"."``. Here a unit is a sentence of
  `ragcli.text.sentence_spans`, the splitter the answer's evidence uses too: a sentence ends
  at ``.``, ``!`` or ``?`` before a capital, a digit or a letter outside ASCII, at the
  full-width ``。！？`` of Chinese and Japanese, and at a blank line or a list item, so
  ``"3.14"``, ``"U.S. Army"`` and a numbered step stay whole. ``；``/``;`` are *not*
  terminators. Each unit ends at its sentence's end; the whitespace after it starts the next.
- ``token``: AdalFlow encodes with tiktoken and decodes each window. Here the caller passes
  the embedding model's tokenizer as ``(start, end)`` character offsets, and a chunk is the
  original substring from its first token's start to its last token's end, so nothing is
  lost or re-spelled by decoding.

Kept AdalFlow quirk: ``passage`` needs ``"\\n\\n"`` exactly, so readers should normalise
``"\\r\\n"`` first.

Every chunk is the raw substring ``text[start:end]``. For the separator modes that equals
AdalFlow's joined string (``separator.join(units) + separator`` for inner windows, without the
trailing separator for the last). Where AdalFlow keeps only non-empty chunks, this module also
drops whitespace-only ones, and ``order`` counts the chunks that are kept.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, compress, count
from operator import le
from types import MappingProxyType

from ragcli.choices import SPLIT_BY
from ragcli.errors import UsageError
from ragcli.types import ChunkSettings, Span
from ragcli.text import PAGE_BREAK, sentence_spans

Tokenize = Callable[[str], Sequence[tuple[int, int]]]


# AdalFlow's SEPARATORS, minus "sentence" (a character class here) and "token" (offsets).
_SEPARATORS = {"page": PAGE_BREAK, "passage": "\n\n", "word": " "}

# Named granularities (LazyLLM's node groups), read-only so no caller can change a shared default.
PRESETS: Mapping[str, ChunkSettings] = MappingProxyType(
    {
        "fine": ChunkSettings(split_by="token", chunk_size=128, chunk_overlap=12),
        "medium": ChunkSettings(split_by="token", chunk_size=256, chunk_overlap=25),
        "coarse": ChunkSettings(split_by="token", chunk_size=1024, chunk_overlap=100),
    }
)


def validate_settings(settings: ChunkSettings) -> None:
    """Check chunk settings the way AdalFlow's ``TextSplitter.__init__`` does.

    Args:
        settings: the unit, window size and overlap to check.

    Raises:
        UsageError: an unknown ``split_by``, ``chunk_size < 1``, ``chunk_overlap < 0`` or
            ``chunk_overlap >= chunk_size``; the message names the command-line option.
    """
    size, overlap = settings.chunk_size, settings.chunk_overlap
    if settings.split_by not in SPLIT_BY:
        raise UsageError(f"--split-by must be one of {', '.join(SPLIT_BY)} (got {settings.split_by!r})")
    if size < 1:
        raise UsageError(f"--chunk-size must be at least 1 (got {size})")
    if overlap < 0:
        raise UsageError(f"--chunk-overlap must be 0 or more (got {overlap})")
    if overlap >= size:
        # An overlap as large as the window would never move it forward.
        raise UsageError(
            f"--chunk-overlap ({overlap}) must be smaller than --chunk-size ({size}); "
            "lower the overlap or raise the size"
        )


def preset(name: str) -> ChunkSettings:
    """The chunk settings of a named granularity (``fine``, ``medium``, ``coarse``).

    Raises:
        UsageError: the name is not a preset; the message lists the valid ones.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise UsageError(f"unknown chunk group {name!r}: choose one of {', '.join(PRESETS)}") from None


def split(
    text: str,
    *,
    split_by: str,
    chunk_size: int,
    chunk_overlap: int,
    tokenize: Tokenize | None = None,
) -> list[Span]:
    """Cut ``text`` into windows of ``chunk_size`` units overlapping by ``chunk_overlap``.

    Runs in time linear in ``len(text)``. Each span satisfies
    ``span.text == text[span.start:span.end]``; empty and whitespace-only windows are dropped
    and ``order`` runs 0, 1, 2, ... over the spans returned.

    Args:
        text: the document text (pages separated by ``"\\f"``).
        split_by: the unit, one of ``page``, ``passage``, ``sentence``, ``word``, ``token``.
        chunk_size: units per window.
        chunk_overlap: units shared by consecutive windows.
        tokenize: for ``token`` only: returns the ``(start, end)`` character offsets of the
            tokens of a string, in order (e.g. a Hugging Face fast tokenizer's
            ``offset_mapping``). Zero-length offsets, such as special tokens, are ignored.

    Returns:
        The spans in document order.

    Raises:
        UsageError: the settings are invalid (see `validate_settings`).
        ValueError: ``split_by="token"`` without ``tokenize``, or offsets that are out of
            range or out of order (a programming error, not a user's).
    """
    validate_settings(ChunkSettings(split_by, chunk_size, chunk_overlap))
    if split_by == "token":
        starts, ends = _token_bounds(text, tokenize)
    else:
        bounds = _unit_bounds(text, split_by)
        starts, ends = bounds[:-1], bounds[1:]
    w_starts, w_ends = _windows(starts, ends, chunk_size, chunk_overlap)
    chunks = list(map(text.__getitem__, map(slice, w_starts, w_ends)))
    # AdalFlow keeps whitespace-only windows; they hold nothing to embed or match, so drop them
    # (str.strip is "" exactly for those).
    keep = list(map(str.strip, chunks))
    kept = [compress(column, keep) for column in (chunks, w_starts, w_ends)]
    return list(map(Span, kept[0], count(), kept[1], kept[2]))


def _unit_bounds(text: str, split_by: str) -> list[int]:
    """Offsets ``b[0..n]`` such that unit j is ``text[b[j]:b[j + 1]]``, separator included."""
    if split_by == "sentence":  # each unit ends where a sentence ends (whitespace goes to the next)
        return [0, *(end for _, end in sentence_spans(text)[:-1]), len(text)]
    separator = _SEPARATORS[split_by]
    parts, sep_len = text.split(separator), len(separator)
    # map/accumulate keep the per-unit work in C: a 5 MB text has about a million words.
    bounds = [0, *accumulate(map(sep_len.__add__, map(len, parts)))]
    bounds[-1] = len(text)  # the last unit has no separator after it
    return bounds


def _token_bounds(text: str, tokenize: Tokenize | None) -> tuple[list[int], list[int]]:
    """Start and end offsets of the non-empty tokens of ``text``, checked for order."""
    if tokenize is None:
        raise ValueError("split_by='token' needs tokenize=, the embedding model's tokenizer")
    pairs = [(s, e) for s, e in tokenize(text) if e > s]
    starts = [s for s, _ in pairs]
    ends = [e for _, e in pairs]
    if pairs and (starts[0] < 0 or ends[-1] > len(text)):
        raise ValueError(f"token offsets fall outside the text of length {len(text)}")
    if not (all(map(le, starts, starts[1:])) and all(map(le, ends, ends[1:]))):
        raise ValueError("token offsets must be in text order")
    return starts, ends


def _windows(starts: list[int], ends: list[int], size: int, overlap: int) -> tuple[list[int], list[int]]:
    """Start and end offsets of the windows over units with the given offsets.

    AdalFlow's loop, in closed form: windows begin at 0, step, 2*step, ...; the first one
    that would reach the last unit (``first + size >= n``) is the final window and runs to
    the last unit, so it always holds a unit the window before it lacked. Slicing instead
    of a Python loop keeps a million units fast.
    """
    n, step = len(starts), size - overlap
    if n == 0:
        return [], []
    inner = 0 if size >= n else (n - size - 1) // step + 1
    last = inner * step
    w_starts = starts[0:last:step] + [starts[last]]
    w_ends = ends[size - 1 : size - 1 + inner * step : step] + [ends[n - 1]]
    return w_starts, w_ends


def page_starts(text: str) -> list[int]:
    """Offsets where each page begins: 0, then one past every ``"\\f"``."""
    return [0, *(m.end() for m in re.finditer(PAGE_BREAK, text))]


def page_at(starts: Sequence[int], offset: int) -> int:
    """The 1-based page holding character ``offset``, given `page_starts` of the text.

    A ``"\\f"`` belongs to the page it closes.
    """
    return bisect_right(starts, offset)


def page_of(offset: int, text: str) -> int:
    """The 1-based page of character ``offset`` in ``text``; use `page_at` for many lookups."""
    return text.count(PAGE_BREAK, 0, offset) + 1


SECTION_CHARS = 200_000


def section_bounds(text: str, size: int = SECTION_CHARS) -> list[tuple[int, int]]:
    """Cut a long text into sections of about `size` characters, for splitting in bounded memory.

    A text up to `size` is one section, so its chunks are exactly those of `split`. A longer
    one is cut at a paragraph break, else a line break, else a space found in the last fifth
    of each section (else exactly at `size`); windows then restart at each cut. Splitting a
    whole 100 MB text at once holds tens of millions of token offsets (gigabytes); a section
    of 200,000 characters holds about 50,000 (the tokenizer's encoding of 1 MB took ~170 MB).
    """
    bounds: list[tuple[int, int]] = []
    start, length = 0, len(text)
    while length - start > size:
        limit, floor = start + size, start + size - size // 5
        cut = -1
        for separator in ("\n\n", "\n", " "):
            found = text.rfind(separator, floor, limit)
            if found > start:
                cut = found + len(separator)
                break
        cut = cut if cut > start else limit
        bounds.append((start, cut))
        start = cut
    if start < length or not bounds:
        bounds.append((start, length))
    return bounds
