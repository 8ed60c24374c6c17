"""Query-term highlighting for the human views of hits (`rag query`'s table and plain lines).

Presentation only: the spans follow the same analysis BM25 uses (stems, CJK bigrams), so what
is bold is what matched.
"""

from __future__ import annotations

import re

from ragcli.analysis import analyze, cjk_bigrams

_WORD = re.compile(r"\w+")


def term_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Character spans of `text` whose BM25 terms occur in the query (stems, CJK bigrams)."""
    terms = set(analyze(query))
    spans: list[tuple[int, int]] = []
    if not terms:
        return spans
    for match in _WORD.finditer(text):
        word, start = match.group(), match.start()
        found = analyze(word)
        if len(word) > 1 and found == cjk_bigrams(word):
            # A CJK run: mark each matching bigram, merging overlaps.
            for i, bigram in enumerate(found):
                if bigram in terms:
                    _add_span(spans, start + i, start + i + 2)
        elif terms.intersection(found):
            _add_span(spans, start, match.end())
    return spans


def _add_span(spans: list[tuple[int, int]], start: int, end: int) -> None:
    if spans and start <= spans[-1][1]:
        spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
    else:
        spans.append((start, end))


def snippet(text: str, query: str, width: int = 300) -> tuple[str, list[tuple[int, int]]]:
    """A whitespace-collapsed window of about `width` characters around the first query term.

    Returns:
        The window text (with "…" where cut) and the spans of query terms inside it.
    """
    flat = " ".join(text.split())
    spans = term_spans(flat, query)
    begin = 0
    if spans and spans[0][0] > width // 3:
        begin = flat.rfind(" ", 0, spans[0][0] - width // 4) + 1
    end = min(len(flat), begin + width)
    if end < len(flat) and " " in flat[end - 20 : end]:
        end = flat.rfind(" ", 0, end)  # cut at a word boundary when one is near
    prefix = "…" if begin else ""
    window = prefix + flat[begin:end] + ("…" if end < len(flat) else "")
    shift = len(prefix) - begin
    inside = [(s + shift, e + shift) for s, e in spans if s >= begin and e <= end]
    return window, inside
