"""Extractive answers: the words of a retrieved sentence that answer the question.

A 135M-parameter model cannot be trusted to write a factual answer (EM 0.00 on xquad-en
even with the right passage), but the retrieved text usually holds one. So
`answer_extractively`, the `rag ask` stage of the styles extractive, sentence and choice,
numbers the top passages as sources, picks their best sentences (`ragcli.answer.sentences`),
abstains when the best sentence is too weak evidence (`is_answerable`), else answers with
the best span (`ragcli.answer.spans`) and its citation ``[n]``; with ``style="sentence"``
the whole best sentence is the answer instead. `choose_with_model` lets the model pick
among the best spans (style choice).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from ragcli.answer.context import Source, build_context
from ragcli.answer.sentences import Embedder, Sentence, score_sentences, sentences_of
from ragcli.answer.spans import Candidate, extract_answer
from ragcli.types import Hit


# Abstention (calibrated on xquad-en with a held-out-articles index, benchmarks/bench_answers.py):
# answer when the best sentence covers this share of the question's content terms, or when
# its embedding cosine with the question reaches DENSE_EVIDENCE.
LEXICAL_EVIDENCE = 0.4
DENSE_EVIDENCE = 0.5
STYLES = ("span", "sentence")


@dataclass(frozen=True)
class Extraction:
    """What the extractive stage found.

    Attributes:
        text: the answer with its citation, e.g. ``"Denver Broncos [1]"``; "" when abstaining.
        sources: the numbered passages the answer was taken from.
        abstained: the evidence was too weak to answer.
        sentence: the best sentence (None when there was none).
        candidates: the spans considered, best first.
    """

    text: str
    sources: tuple[Source, ...]
    abstained: bool
    sentence: Sentence | None = None
    candidates: tuple[Candidate, ...] = ()


def is_answerable(
    sentence: Sentence | None, *, lexical: float = LEXICAL_EVIDENCE, dense: float = DENSE_EVIDENCE
) -> bool:
    """Whether the best sentence is evidence enough to answer (see the thresholds above)."""
    return sentence is not None and (sentence.lexical >= lexical or sentence.dense >= dense)


def numbered_sources(hits: Sequence[Hit], passages: int) -> list[Source]:
    """The best `passages` hits as numbered sources (deduplicated, adjacent chunks merged)."""
    return build_context(
        list(hits)[:passages], budget=10**9, count_tokens=lambda text: 0, max_sources=passages
    )


def answer_extractively(
    question: str,
    hits: Sequence[Hit],
    *,
    embedder: Embedder | None = None,
    passages: int = 3,
    style: str = "span",
) -> Extraction:
    """The `rag ask` extractive stage: the words of the retrieved text that answer.

    Args:
        question: the question.
        hits: retrieved hits, best first.
        embedder: scores sentences by cosine too (None: lexical only).
        passages: how many of the best hits to read.
        style: "span" (the short answer) or "sentence" (its whole sentence).

    Returns:
        The answer with its citation, or an abstention.
    """
    sources = tuple(numbered_sources(hits, passages))
    ranked = score_sentences(question, sentences_of([s.text for s in sources]), embedder=embedder)
    best = ranked[0] if ranked else None
    if not is_answerable(best):
        return Extraction("", sources, True, best)
    found = tuple(extract_answer(question, [best]))
    if style == "sentence" or not found:
        return Extraction(f"{best.text} [{best.passage + 1}]", sources, False, best, found)
    chosen = found[0]
    return Extraction(f"{chosen.text} [{chosen.sentence.passage + 1}]", sources, False, best, found)


LETTERS = "ABCDE"
CHOICE_SYSTEM = "You pick the option that answers the question. Reply with its letter only."


def choice_prompt(question: str, sentence: str, options: Sequence[str]) -> list[dict[str, str]]:
    """A multiple-choice prompt: the sentence, the question and lettered candidate spans."""
    lines = "\n".join(f"{letter}) {text}" for letter, text in zip(LETTERS, options))
    user = f"Text: {sentence}\nQuestion: {question}\nOptions:\n{lines}\nAnswer:"
    return [{"role": "system", "content": CHOICE_SYSTEM}, {"role": "user", "content": user}]


def choice_grammar(count: int) -> str:
    """A llama.cpp GBNF grammar allowing only the first `count` option letters."""
    return "root ::= " + " | ".join(f'"{letter}"' for letter in LETTERS[:count])


def choose_with_model(question: str, found: Extraction, generator, *, options: int = 4) -> Extraction:
    """Let the model pick the answer among the best candidate spans (a one-letter reply).

    A tiny model cannot write a span, but choosing among a few is within reach; the grammar
    makes any other reply impossible. With fewer than two candidates nothing is asked.
    """
    shown = [c for c in found.candidates[:options]]
    if found.abstained or found.sentence is None or len(shown) < 2:
        return found
    messages = choice_prompt(question, found.sentence.text, [c.text for c in shown])
    reply = generator.complete(messages, max_tokens=1, temperature=0.0, grammar=choice_grammar(len(shown)))
    index = LETTERS.find(reply.strip()[:1])
    chosen = shown[index] if 0 <= index < len(shown) else shown[0]
    return replace(found, text=f"{chosen.text} [{chosen.sentence.passage + 1}]")
