"""A capable model's summary of one whole document: map-reduce within the context budget.

A question about a document as a whole ("summarize X", "what does the X page cover") is
answered, with a capable model, by the model reading the document's text in order:

1. The text is the document's chunks in order. A document longer than `MAX_PARTS` context
   windows is first cut down to its extractive summary (`ragcli.answer.summary`: title, lead and
   most central sentences, in order), so a book costs as much as a few pages.
2. **Map**: the text is split, at paragraph and then sentence ends, into parts that each fit
   the context budget, and the model says in a few sentences what each part covers.
3. **Reduce**: with more than one part, the model turns those notes into one summary.

Each step uses only the text it is given; the summary is cited to the document's source and
followed by the extractive summary's quotes (`Asker`), as every generated answer is followed by
its evidence.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ragcli.answer.context import Source
from ragcli.generation.llama import Generator, Message
from ragcli.text import sentence_spans

# Documents longer than this many context windows are summarised from their extractive summary.
MAX_PARTS = 2
# Tokens of document text in one map prompt at most (less when the context window is smaller):
# a 0.5B model on two CPU cores reads about 130 prompt tokens a second, so a whole 2048-token
# window per part made a summary take half a minute.
PART_TOKENS = 700
# Longest note on one part, in tokens (the final summary may use the answer's max_tokens): on a
# CPU each generated token costs far more than a prompt token.
NOTE_TOKENS = 100
# Characters per token when sizing an extractive cut to a token budget (English prose: about 4).
CHARS_PER_TOKEN = 3.5
SUMMARY_SYSTEM = (
    "You summarize documents for a reader. In two to four plain sentences, say what the text is "
    "about and what it explains, using only the text given. Do not add anything it does not say."
)
COMBINE_SYSTEM = (
    "You combine notes on the parts of one document into one summary of the whole document. In two "
    "to four plain sentences, say what the document is about and what it explains, using only the notes."
)


def part_prompt(title: str, text: str) -> list[Message]:
    """The map step's prompt: what one part of the document covers."""
    return [
        {"role": "system", "content": SUMMARY_SYSTEM},
        {"role": "user", "content": f"Document: {title}\n\n{text}\n\nWhat does this text cover?"},
    ]


def combine_prompt(title: str, notes: Sequence[str]) -> list[Message]:
    """The reduce step's prompt: the parts' notes, in document order."""
    listed = "\n".join(f"Part {number}: {note}" for number, note in enumerate(notes, start=1))
    return [
        {"role": "system", "content": COMBINE_SYSTEM},
        {"role": "user", "content": f"Document: {title}\n\n{listed}\n\nWhat does the whole document cover?"},
    ]


def prompt_overhead(count_tokens: Callable[[str], int]) -> int:
    """Tokens the map prompt takes besides the document's text and title."""
    return sum(count_tokens(message["content"]) for message in part_prompt("", ""))


def split_to_budget(text: str, budget: int, count_tokens: Callable[[str], int]) -> list[str]:
    """The text in order, cut at paragraph ends (else sentence ends) into parts of at most
    `budget` tokens; a single sentence longer than that is a part of its own, cut to fit."""
    pieces: list[str] = []
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        if count_tokens(paragraph) <= budget:
            pieces.append(paragraph)
        else:
            pieces += [paragraph[start:end] for start, end in sentence_spans(paragraph)]
    parts: list[str] = []
    current, used = [], 0
    for piece in pieces:
        cost = count_tokens(piece)
        if cost > budget:  # one sentence over the window: keep its start
            piece, cost = piece[: int(budget * CHARS_PER_TOKEN)], budget
        if current and used + cost > budget:
            parts.append("\n\n".join(current))
            current, used = [], 0
        current.append(piece)
        used += cost
    if current:
        parts.append("\n\n".join(current))
    return parts


def final_prompt(
    generator: Generator,
    source: Source,
    title: str,
    *,
    budget: int,
    temperature: float = 0.0,
    shorter: Callable[[int], str] | None = None,
) -> list[Message] | None:
    """The map step (see the module docstring), and the prompt whose reply is the summary: the
    one part's own prompt, or the prompt combining the parts' notes. None: nothing to summarise.

    Args:
        budget: tokens of document text one prompt may hold.
        shorter: the document's extractive summary text within a number of characters, used
            when the document is longer than `MAX_PARTS` parts (None: always the whole text).
    """
    budget = min(budget, PART_TOKENS)
    text = source.text
    if shorter is not None and generator.count_tokens(text) > MAX_PARTS * budget:
        text = shorter(int(MAX_PARTS * budget * CHARS_PER_TOKEN))
    parts = split_to_budget(text, budget, generator.count_tokens)[:MAX_PARTS]
    if len(parts) <= 1:
        return part_prompt(title, parts[0]) if parts else None
    notes = [
        generator.complete(part_prompt(title, part), max_tokens=NOTE_TOKENS, temperature=temperature).strip()
        for part in parts
    ]
    return combine_prompt(title, [note for note in notes if note])
