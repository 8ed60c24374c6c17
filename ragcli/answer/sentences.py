"""The few sentences of the retrieved passages that matter for a question.

1. Each passage is cut into sentences (`split_passage`): a sentence ends at ``.``, ``!`` or
   ``?`` followed by whitespace and an upper-case letter, digit, quote or a letter outside
   ASCII ("É", "中": a lower-case ASCII letter after it marks an abbreviation), at a full-width
   terminator, or at a line break. "U.S. Army" and "3.14" therefore stay whole more often
   than a plain split on ``.`` would leave them.
2. Every sentence is scored against the question (`score_sentences`):

   - **lexical**: the share of the question's content terms (`analyze`, minus the words of
     the question's form such as "what" or "how") that the sentence contains, each term
     weighted by ``1 / (1 + documents holding it among the passages)``-style rarity so a
     shared topic word counts less than a specific one;
   - **dense** (with an embedder): the cosine of question and sentence embeddings;
   - the score is ``LEXICAL_WEIGHT * lexical + (1 - LEXICAL_WEIGHT) * dense``, plus a small
     bonus for coming from a better-ranked passage.
3. `select_sentences` keeps the best few.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ragcli.embedding.base import Embedder
from ragcli.analysis import analyze

# Words of the question's form, not its topic (shared with `ragcli.answer.ask.QUESTION_WORDS`).
FORM_WORDS = frozenset(
    analyze(
        "what which who whom whose when where why how many much do does did can could should would "
        "is are was were name called type kind year"
    )
)
# Found on xquad-en (benchmarks/bench_answers.py): lexical overlap alone finds the answer's
# sentence more often than embeddings alone; a blend of the two beats both.
LEXICAL_WEIGHT = 0.45
# Per rank step of the passage the sentence came from (ties go to the better passage).
RANK_BONUS = 0.02

# A line break ends a sentence only before a blank line, a list item, a heading or a table row:
# a single break inside a paragraph is line wrapping.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?(?:[A-Z0-9]|[^\x00-\x7f]))|(?<=[。！？])|"
    r"\n\s*\n\s*|\n(?=\s*(?:[-*+#>|]|\d+[.)])\s)|\n(?=[\"'(\[]?[A-Z0-9])"
)
# A line this short without a full stop, followed by a capitalised line, is a title.
TITLE_CHARS = 60


# "U.S. Army", "Dr. Smith", "St. Louis": a period after initials or a title ends no sentence.
_ABBREVIATION = re.compile(
    r"(?:\b(?:[A-Z]\.){1,3}|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Mt|No|vs|v|Gen|Col|Lt|Rev)\.)[\"')\]]*$"
)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a retrieved passage.

    Attributes:
        text: the sentence, stripped.
        passage: index of its passage in the list given to `sentences_of`.
        start: character offset of the sentence in its passage.
        score: relevance to the question (0 until scored).
        lexical: the lexical part of the score (coverage of the question's content terms).
        dense: the cosine part (0 without an embedder).
    """

    text: str
    passage: int
    start: int
    score: float = 0.0
    lexical: float = 0.0
    dense: float = 0.0


def split_passage(text: str) -> list[tuple[int, int]]:
    """Character ``(start, end)`` of each non-empty sentence of `text`."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if _ABBREVIATION.search(text, 0, match.start()) or _wrapped(text, match) or _list_number(text, match):
            continue
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    result = []
    for begin, end in spans:
        piece = text[begin:end]
        stripped = piece.strip()
        if stripped:
            offset = begin + piece.index(stripped[0])
            result.append((offset, offset + len(stripped)))
    return result


def _list_number(text: str, match: re.Match) -> bool:
    """The period of a numbered list item's number ("2. Add the salt") ends no sentence."""
    line_start = text.rfind("\n", 0, match.start()) + 1
    return bool(_ITEM_NUMBER.fullmatch(text[line_start : match.start()]))


_ITEM_NUMBER = re.compile(r"\s*\d{1,3}[.)]")


def _wrapped(text: str, match: re.Match) -> bool:
    """A single line break inside a paragraph (the line before is long, not a title)."""
    if match.group() != "\n" or text[match.start() - 1 : match.start()] in (".", "!", "?"):
        return False
    line_start = text.rfind("\n", 0, match.start()) + 1
    return match.start() - line_start >= TITLE_CHARS


def sentences_of(passages: Sequence[str]) -> list[Sentence]:
    """All sentences of the passages, in passage order."""
    return [
        Sentence(text[s:e], number, s) for number, text in enumerate(passages) for s, e in split_passage(text)
    ]


# "how long/old/far ...": the adjective is the question's form (a duration, an age), not its topic.
_HOW_ADJECTIVE = re.compile(r"\bhow (long|old|far|often|big|large|high|tall|fast|heavy|deep|wide)\b", re.I)


def question_terms(question: str) -> set[str]:
    """The question's content terms: analysed words minus the words of its form."""
    terms = set(analyze(question))
    form = set(FORM_WORDS) | {t for m in _HOW_ADJECTIVE.finditer(question) for t in analyze(m.group(1))}
    return (terms - form) or terms


def lexical_scores(question: str, sentences: Sequence[Sentence]) -> list[float]:
    """Rarity-weighted share of the question's content terms each sentence contains."""
    terms = question_terms(question)
    sets = [set(analyze(s.text)) for s in sentences]
    if not terms or not sets:
        return [0.0] * len(sentences)
    # A term in every sentence tells them apart less than a term in one.
    weight = {t: 1.0 / math.log(2.0 + sum(t in found for found in sets)) for t in terms}
    total = sum(weight.values())
    return [sum(weight[t] for t in terms & found) / total for found in sets]


def score_sentences(
    question: str,
    sentences: Sequence[Sentence],
    *,
    embedder: Embedder | None = None,
    question_vector: np.ndarray | None = None,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> list[Sentence]:
    """Score every sentence against the question (see the module docstring).

    Args:
        question: the question.
        sentences: from `sentences_of`.
        embedder: optional; adds embedding cosine.
        question_vector: the question's embedding when already computed.
        lexical_weight: weight of the lexical part when an embedder is given.

    Returns:
        The sentences with scores, best first.
    """
    lexical = lexical_scores(question, sentences)
    dense = [0.0] * len(sentences)
    if embedder is not None and sentences:
        vectors = np.asarray(embedder.embed([s.text for s in sentences]))
        query = question_vector if question_vector is not None else np.asarray(embedder.embed([question]))[0]
        dense = [float(v) for v in vectors @ query]
    mix = lexical_weight if embedder is not None else 1.0
    scored = [
        Sentence(s.text, s.passage, s.start, mix * lx + (1 - mix) * dn - RANK_BONUS * s.passage, lx, dn)
        for s, lx, dn in zip(sentences, lexical, dense)
    ]
    return sorted(scored, key=lambda s: -s.score)


def select_sentences(
    question: str, passages: Sequence[str], *, embedder: Embedder | None = None, keep: int = 3
) -> list[Sentence]:
    """The `keep` sentences of `passages` most relevant to `question`, best first."""
    return score_sentences(question, sentences_of(passages), embedder=embedder)[:keep]
