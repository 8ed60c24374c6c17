"""Prompt shapes: what the model is told, and how its answer is read back.

A prompt shape is a function ``(question, sources) -> messages``; `PROMPTS` names the
built-in ones so a later shape (extractive, grammar-constrained) is one registry entry.
The model's own chat template turns the messages into text (see `ragcli.generation.llama`).
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from ragcli.answer.context import Source
from ragcli.generation.llama import Message

NOT_FOUND = "I could not find this in your documents."
# Raised whenever a prompt or how a reply is read back changes: cached answers of the old one
# are not served again.
PROMPT_VERSION = 3

PromptShape = Callable[[str, Sequence[Source]], list[Message]]

CITED_SYSTEM = (
    "You answer questions using only the numbered sources the user gives you. "
    "Cite the sources you use with their number in square brackets, like [1] or [2]. "
    "Answer in a few sentences. If the sources do not contain the answer, reply exactly: "
    f"{NOT_FOUND}"
)

_CITATION = re.compile(r"\[\s*(\d{1,3}(?:\s*,\s*\d{1,3})*)\s*\]")
# Ways a model says the sources do not hold the answer (the exact phrase, and paraphrases
# small models produce instead of it).
_NOT_FOUND = re.compile(
    r"(could not find|couldn't find|can ?not find|cannot be found|not found|no information|"
    r"(do|does) not (contain|mention|provide|include)|not (mentioned|provided|stated) in)",
    re.IGNORECASE,
)


def format_sources(sources: Sequence[Source]) -> str:
    """The sources as the model reads them: a header line then the passage, blank-line separated."""
    return "\n\n".join(f"{source.header()}\n{source.text.strip()}" for source in sources)


def cited_prompt(question: str, sources: Sequence[Source]) -> list[Message]:
    """The default shape: a system rule to cite and abstain, then the sources and the question."""
    user = f"Sources:\n\n{format_sources(sources)}\n\nQuestion: {question}"
    return [{"role": "system", "content": CITED_SYSTEM}, {"role": "user", "content": user}]


GROUNDED_SYSTEM = (
    "You answer questions using only the numbered sources. Reply with only the shortest answer: "
    "the exact words from the sources, not a sentence. If the sources do not contain the answer, "
    f"reply exactly: {NOT_FOUND}"
)
# Worked examples, shown as earlier turns of the chat: a 0.5B model follows a shown reply far
# better than a described one (it otherwise often restates the question as a sentence). They
# come first and never change, so llama.cpp reuses their evaluated tokens from one question to
# the next. No citation in the replies: ragcli cites the source the words were copied from,
# which is right more often than the model's own choice of number (qa-tune).
# A made-up place, so that no reply of the examples is a fact of anyone's documents.
GROUNDED_EXAMPLE = (
    "[1] The Old Mill Bridge was built by Anna Reyes and opened on 3 May 1921. It carried traffic "
    "for forty years.\n\n"
    "[2] A flood in 1961 washed the bridge away, and a ferry replaced it.",
    (
        ("Who built the Old Mill Bridge?", "Anna Reyes"),
        ("How many years did the bridge carry traffic?", "forty"),
        ("Why was the bridge lost?", "a flood in 1961"),
    ),
)


def grounded_prompt(question: str, sources: Sequence[Source]) -> list[Message]:
    """The generative default: the short answer's words, for any question.

    The sources are the best sentences of each passage (`ragcli.answer.evidence.excerpts`),
    best source last; ragcli cites and quotes the sentence supporting the answer under it, so
    the model only has to find and copy the words, which a 0.5B model does well.
    """
    messages: list[Message] = [{"role": "system", "content": GROUNDED_SYSTEM}]
    passages, examples = GROUNDED_EXAMPLE
    for asked, reply in examples:
        messages.append({"role": "user", "content": grounded_user(passages, asked)})
        messages.append({"role": "assistant", "content": reply})
    # Only the number and the text: a 0.5B model given "[1] notes/a.md" headers answered with
    # the header ("[1] xqen-0019") a third of the time on qa-tune. The best source comes last,
    # nearest the question: a 0.5B model copies from the nearest passage it can (f1 0.53 -> 0.58
    # on 60 qa-tune questions against best first).
    shown = "\n\n".join(f"[{source.number}] {' '.join(source.text.split())}" for source in reversed(sources))
    messages.append({"role": "user", "content": grounded_user(shown, question)})
    return messages


def grounded_user(passages: str, question: str) -> str:
    return f"Sources:\n\n{passages}\n\nQuestion: {question}"


def without_citations(text: str) -> str:
    """The text without its ``[n]`` / ``[n, m]`` markers, whitespace collapsed."""
    return " ".join(_CITATION.sub(" ", text).split())


# What a model may put before the words themselves ("Answer:", "The answer is", "The exact
# words from the sources are:").
_PREAMBLE = re.compile(
    r"^(?:(?:the\s+)?(?:short(?:est)?\s+|exact\s+)?(?:answer|words)(?:\s+from\s+the\s+sources?)?"
    r"(?:\s+(?:is|are|would be))?\s*:?|according to (?:the )?sources?(?: \[\d+\])?,?)\s+",
    re.IGNORECASE,
)


def short_answer(text: str) -> str | None:
    """The short answer in a generated reply: its first line without citations or a preamble.

    None when that leaves nothing (a reply of only a citation). Enclosing quotes and a final full
    stop after a single short phrase are dropped; a sentence is returned as it is.
    """
    line = next((line for line in text.strip().splitlines() if line.strip()), "")
    short = _PREAMBLE.sub("", without_citations(line), count=1).strip()
    if not re.search(r"[^\W\d_]", short) and not re.fullmatch(r"\d[\d,.]*\d|\d", short.rstrip(".")):
        return None  # no word and no whole number: a citation's remains ("6]", "[ 6 ]")
    if len(short) > 1 and short[0] in "\"“'" and short[-1] in "\"”'":
        short = short[1:-1].strip()
    if short.endswith(".") and short.count(".") == 1 and len(short.split()) <= 6:
        short = short[:-1].rstrip()
    return short or None


def question_first_prompt(question: str, sources: Sequence[Source]) -> list[Message]:
    """The question before and after the sources (helps small models keep it in view)."""
    user = f"Question: {question}\n\nSources:\n\n{format_sources(sources)}\n\nAnswer the question: {question}"
    return [{"role": "system", "content": CITED_SYSTEM}, {"role": "user", "content": user}]


PROMPTS: Mapping[str, PromptShape] = {
    "grounded": grounded_prompt,
    "cited": cited_prompt,
    "question-first": question_first_prompt,
}


def prompt_overhead(shape: PromptShape, question: str, count_tokens: Callable[[str], int]) -> int:
    """Tokens the prompt takes with no sources in it (for the context budget)."""
    return sum(count_tokens(message["content"]) for message in shape(question, []))


def parse_citations(text: str, n_sources: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Source numbers cited as ``[1]`` or ``[1, 3]`` in `text`, in first-cited order.

    Returns:
        ``(valid, invalid)``: numbers within ``1..n_sources``, and the others (invented).
    """
    valid: list[int] = []
    invalid: list[int] = []
    for match in _CITATION.finditer(text):
        for number in (int(part) for part in match.group(1).split(",")):
            bucket = valid if 1 <= number <= n_sources else invalid
            if number not in bucket:
                bucket.append(number)
    return tuple(valid), tuple(invalid)


def strip_invalid_citations(text: str, n_sources: int) -> str:
    """Remove citation numbers that name no source; a bracket left empty disappears."""

    def keep(match: re.Match) -> str:
        numbers = [p.strip() for p in match.group(1).split(",") if 1 <= int(p) <= n_sources]
        return f"[{', '.join(numbers)}]" if numbers else ""

    kept = _CITATION.sub(keep, text)
    # A line left with only punctuation (a removed "[6]." reply) is dropped too.
    return "\n".join(line for line in kept.splitlines() if not line.strip() or re.search(r"\w", line))


def says_not_found(text: str) -> bool:
    """Whether the answer is the model declining (no answer in the sources).

    Only the first sentence is checked, so an answer that explains something and then
    notes a missing detail is not taken for a refusal.
    """
    head = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return not text.strip() or bool(_NOT_FOUND.search(head))
