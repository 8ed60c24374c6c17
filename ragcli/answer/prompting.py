"""Prompt shapes: what the model is told, and how its answer is read back.

A prompt shape is a function ``(question, sources) -> messages``; `PROMPTS` names the
built-in ones so a later shape (extractive, grammar-constrained) is one registry entry.
The model's own chat template turns the messages into text (see `ragcli.llm`).
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from ragcli.answer.context import Source
from ragcli.llm import Message

NOT_FOUND = "I could not find this in your documents."

PromptShape = Callable[[str, Sequence[Source]], list[Message]]

CITED_SYSTEM = (
    "You answer questions using only the numbered sources the user gives you. "
    "Cite the sources you use with their number in square brackets, like [1] or [2]. "
    "Answer in a few sentences. If the sources do not contain the answer, reply exactly: "
    f"{NOT_FOUND}"
)

_CITATION = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
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
GROUNDED_EXPLAIN_SYSTEM = (
    "You answer questions using only the numbered sources. Answer in one to three sentences and "
    "cite the source of each with its number in square brackets, like [1]. If the sources do not "
    f"contain the answer, reply exactly: {NOT_FOUND}"
)


def grounded_prompt(question: str, sources: Sequence[Source]) -> list[Message]:
    """The generative default: the best sentences of each source, then the question.

    A factoid question (`ragcli.answer.evidence.is_factoid`) asks for the exact short words, which
    a 0.5B model copies well; any other question asks for one to three cited sentences.
    """
    from ragcli.answer.evidence import is_factoid

    factoid = is_factoid(question)
    system = GROUNDED_SYSTEM if factoid else GROUNDED_EXPLAIN_SYSTEM
    # Only the number and the text: a 0.5B model given "[1] notes/a.md" headers answered with
    # the header ("[1] xqen-0019") a third of the time on qa-tune.
    passages = "\n\n".join(f"[{source.number}] {' '.join(source.text.split())}" for source in sources)
    user = f"Sources:\n\n{passages}\n\nQuestion: {question}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def without_citations(text: str) -> str:
    """The text without its ``[n]`` / ``[n, m]`` markers, whitespace collapsed."""
    return " ".join(_CITATION.sub(" ", text).split())


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

    return _CITATION.sub(keep, text)


def says_not_found(text: str) -> bool:
    """Whether the answer is the model declining (no answer in the sources).

    Only the first sentence is checked, so an answer that explains something and then
    notes a missing detail is not taken for a refusal.
    """
    head = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return not text.strip() or bool(_NOT_FOUND.search(head))
