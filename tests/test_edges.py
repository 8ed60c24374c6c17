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


def widened(rows: list[tuple[int, int, int, str]], at: int) -> Chunk:
    """Chunk `at` of `rows` after widening, its neighbours read as `Backend.neighbour_chunks` does."""
    calls = []

    def neighbours(doc: int, group: str, order: int):
        calls.append(order)
        return [row for row in rows if row[0] - 1 in (order - 1, order + 1)]

    [hit] = whole_sentences([hit_of(rows[at])], neighbours)
    assert calls == [at]  # one read, of that chunk's two neighbours
    return hit.chunk


def test_a_chunk_cut_inside_sentences_is_widened_to_whole_ones():
    rows = windows(DOC, 60, 50)
    assert not rows[1][3].startswith("The moon")  # cut inside a sentence at both ends
    chunk = widened(rows, 1)
    assert DOC[chunk.start : chunk.end] == chunk.text  # still the document's own text
    assert chunk.text.startswith("The moon pulls") and chunk.text.endswith("far side.")


def test_a_whole_chunk_is_left_alone():
    assert widened([(1, 0, len(DOC), DOC)], 0).text == DOC


def test_no_widening_past_a_page_break_or_into_a_sentence_longer_than_the_limit():
    paged = DOC.replace("The moon pulls", "The moon\fpulls")
    rows = windows(paged, 60, 50)
    chunk = widened(rows, 1)
    assert "\f" not in chunk.text and chunk.start == rows[1][1]
    endless = "word " * (EDGE_CHARS // 2) + "end."
    rows = windows(endless, 300, 250)
    assert widened(rows, 2).start == rows[2][1]  # its sentence starts too far back to reach


def test_a_long_sentence_is_not_cut_where_the_text_at_hand_starts_with_spaces():
    """The limit can fall on a space, or the neighbour start with one: neither is a sentence start."""
    for text, size, step, at in (
        ("Intro." + 5 * " " + "word " * 300 + "end. After.", 1000, 900, 1),
        ("First sentence here. " + "word " * 200 + "end.", 300, 250, 2),
    ):
        rows = windows(text, size, step)
        assert widened(rows, at).start == rows[at][1]


def test_a_chunk_opening_with_a_sentence_that_points_back_brings_the_one_it_points_at():
    """ "This behaviour ..." alone does not say what it is about: the statement before it, at the
    end of the chunk before, comes too (one sentence, not past a heading)."""
    text = (
        "# Release\n\nThe tool writes the new number to the manifest. "
        "If run in a repository, it also creates a release commit and tag. "
        "This behaviour is controlled by the tag setting. It can be turned off on the command line."
    )
    at = text.index("This behaviour")
    rows = [(1, 0, at, text[:at]), (2, at, len(text), text[at:])]
    chunk = widened(rows, 1)
    assert chunk.text.startswith("If run in a repository") and text[chunk.start : chunk.end] == chunk.text
    plain = text.replace("This behaviour is", "The tag setting is")
    rows = [(1, 0, at, plain[:at]), (2, at, len(plain), plain[at:])]
    assert widened(rows, 1).start == at  # a sentence that points nowhere is left alone
    headed = "Intro words of the page here.\n\n# Tags\n\nThis setting turns tags on."
    at = headed.index("This")
    rows = [(1, 0, at, headed[:at]), (2, at, len(headed), headed[at:])]
    assert widened(rows, 1).start == at  # the sentence before is a heading's


def test_read_on_adds_the_next_chunks_up_to_a_sentence_end_within_the_limit():
    from ragcli.answer.edges import READ_ON_CHARS, read_on

    text = "".join(f"Field number {n} of the record holds its own value. " for n in range(200))
    rows = windows(text, 300, 250)

    def neighbours(doc: int, group: str, order: int):
        return [row for row in rows if row[0] - 1 in (order - 1, order + 1)]

    first, second = read_on([hit_of(rows[0]), hit_of(rows[1])], neighbours, 1)
    assert second.chunk == hit_of(rows[1]).chunk  # beyond `count`: as it was
    assert text[first.chunk.start : first.chunk.end] == first.chunk.text
    assert rows[0][2] + READ_ON_CHARS - 60 < first.chunk.end <= rows[0][2] + READ_ON_CHARS
    assert first.chunk.text.endswith("value.")
    paged = text[:400] + "\f" + text[400:]
    rows = windows(paged, 300, 250)
    assert "\f" not in read_on([hit_of(rows[0])], neighbours, 1)[0].chunk.text
