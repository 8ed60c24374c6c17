"""Whole sentences at the edges of retrieved chunks: a chunk cut inside a sentence is widened to
that sentence's start and end from its neighbours, within limits."""

from __future__ import annotations

from ragcli.answer.edges import EDGE_CHARS, whole_sentences
from ragcli.types import Chunk, Hit

DOC = (
    "Tides rise twice a day. The moon pulls the water of the near side towards it, and the "
    "earth is pulled away from the far side. Spring tides follow a new or full moon."
)


def windows(text: str, size: int, step: int) -> list[tuple[int, int, int, str]]:
    """Overlapping (id, start, end, text) windows of `text`, as a document's chunks are stored."""
    starts = range(0, len(text), step)
    return [(n + 1, s, min(s + size, len(text)), text[s : s + size]) for n, s in enumerate(starts)]


def hit_of(row: tuple[int, int, int, str]) -> Hit:
    chunk_id, start, end, text = row
    return Hit(Chunk(chunk_id, 1, "medium", chunk_id - 1, text, start, end, None, "tides.md"), 1.0, 1, {})


def test_a_chunk_cut_inside_sentences_is_widened_to_whole_ones():
    rows = windows(DOC, 60, 50)
    middle = rows[1]
    assert not middle[3].startswith("The moon")  # cut inside a sentence at both ends
    [widened] = whole_sentences([hit_of(middle)], lambda doc, group: rows)
    chunk = widened.chunk
    assert DOC[chunk.start : chunk.end] == chunk.text  # still the document's own text
    assert chunk.text.startswith("The moon pulls") and chunk.text.endswith("far side.")


def test_a_document_is_read_once_and_a_whole_chunk_is_left_alone():
    calls = []
    rows = [(1, 0, len(DOC), DOC)]

    def document_chunks(doc, group):
        calls.append(doc)
        return rows

    hits = whole_sentences([hit_of(rows[0]), hit_of(rows[0])], document_chunks)
    assert calls == [1] and [h.chunk.text for h in hits] == [DOC, DOC]


def test_no_widening_past_a_page_break_or_into_a_sentence_longer_than_the_limit():
    paged = DOC.replace("The moon pulls", "The moon\fpulls")
    rows = windows(paged, 60, 50)
    [widened] = whole_sentences([hit_of(rows[1])], lambda doc, group: rows)
    assert "\f" not in widened.chunk.text and widened.chunk.start == rows[1][1]
    endless = "word " * (EDGE_CHARS // 2) + "end."
    rows = windows(endless, 300, 250)
    [widened] = whole_sentences([hit_of(rows[2])], lambda doc, group: rows)
    assert widened.chunk.start == rows[2][1]  # its sentence starts too far back to reach
