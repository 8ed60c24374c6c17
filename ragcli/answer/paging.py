"""A quoted passage cut at the pages its quotes are on, so that each citation names one page.

A source of an evidence answer is a retrieved passage, often several chunks merged, and it can
run over page breaks (PDF pages, slides, sheets, chapters). A citation ``[n]`` names one source
and one page, so when the sentences quoted from one source lie on several pages, the source is
cut at those pages: each piece holds the quotes of one page and is cited on its own, with that
page (``report.pdf:3``, ``report.pdf:4``); `rag get` and `rag open` on it land on that page.
The pieces follow each other in the source's place and together hold its whole text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ragcli.answer.completion import Selection
from ragcli.answer.context import Source
from ragcli.answer.sentences import Sentence
from ragcli.text import PAGE_BREAK


def split_at_quoted_pages(chosen: Selection) -> Selection:
    """`chosen` with each source whose quoted sentences lie on several pages cut into one
    source per such page, sources renumbered in order and each sentence moved to its piece.

    A piece runs from the start of its page (the first piece: from the source's start) to the
    start of the next piece; a list cut short continues after the source's last piece; a
    sentence another source repeats cites the piece of that source holding its words.
    """
    pieces: list[Source] = []
    moved: dict[int, list[tuple[int, int]]] = {}  # old passage -> [(offset, new passage)]
    for number, source in enumerate(chosen.sources):
        quoted = [s for s in chosen.chosen if s.passage == number]
        moved[number] = []
        for offset, end in _piece_spans(source.text, quoted):
            moved[number].append((offset, len(pieces)))
            pieces.append(_piece(source, offset, end, len(pieces) + 1))
    if len(pieces) == len(chosen.sources):
        return chosen
    result = Selection(chosen.left, chosen.label, pieces)
    result.chosen = [_moved(sentence, moved[sentence.passage]) for sentence in chosen.chosen]
    result.cut = {moved[passage][-1][1] for passage in chosen.cut}
    for (passage, start), others in chosen.also.items():
        quoted = next(s for s in chosen.chosen if (s.passage, s.start) == (passage, start))
        twin = _moved(quoted, moved[passage])
        result.also[(twin.passage, twin.start)] = [_holding(twin.text, moved[o], pieces) for o in others]
    return result


def _piece_spans(text: str, quoted: Sequence[Sentence]) -> list[tuple[int, int]]:
    """Where `text` is cut: at the start of each page holding a quote, after the first such page."""
    pages = sorted({text.count(PAGE_BREAK, 0, s.start) for s in quoted})
    starts = [0] + [_page_start(text, page) for page in pages[1:]]
    return list(zip(starts, starts[1:] + [len(text)]))


def _page_start(text: str, page: int) -> int:
    """The offset of page `page` of `text` (0-based: the text after its `page`-th page break)."""
    offset = -1
    for _ in range(page):
        offset = text.index(PAGE_BREAK, offset + 1)
    return offset + 1


def _piece(source: Source, offset: int, end: int, number: int) -> Source:
    page = None if source.page is None else source.page + source.text.count(PAGE_BREAK, 0, offset)
    return replace(source, number=number, page=page, text=source.text[offset:end])


def _moved(sentence: Sentence, spans: Sequence[tuple[int, int]]) -> Sentence:
    """`sentence` as a sentence of the piece of its source that holds it."""
    offset, passage = next((o, p) for o, p in reversed(spans) if o <= sentence.start)
    return replace(sentence, passage=passage, start=sentence.start - offset)


def _holding(text: str, spans: Sequence[tuple[int, int]], pieces: Sequence[Source]) -> int:
    """The piece (of one source's `spans`) whose text holds `text`'s words, else its first."""
    words = " ".join(text.split())
    found = (p for _, p in spans if words in " ".join(pieces[p].text.split()))
    return next(found, spans[0][1])
