"""The few sentences of the retrieved passages that matter for a question.

1. Each passage is cut into sentences by the splitter ingest uses too
   (`ragcli.text.sentence_spans`).
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
from typing import Callable, Mapping, Sequence

import numpy as np

from ragcli.embedding.base import Embedder
from ragcli.analysis import analyze
from ragcli.text import sentence_spans

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
# A question term held by this share of the index's chunks or more is the collection's own
# subject ("python" in Python's docs, "npm" in npm's): every sentence of it is about that,
# whether or not it repeats the word, so the term counts as held by every sentence read. Docs
# seldom repeat their product's name, so sentence by sentence it looked rare and outweighed the
# subject asked about ("what is a lambda in python?" quoted "... my usual course is to avoid
# using lambda." over the page's definition).
COLLECTION_SHARE = 0.9


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


def sentences_of(passages: Sequence[str]) -> list[Sentence]:
    """All sentences of the passages, in passage order; a "sentence" without a letter or digit
    (a stray ".", a rule of dashes) is none: it says nothing a quote could show. A page break
    (a PDF's page, a slide, a sheet) ends a sentence: a quote cites the one page it is on."""
    return [
        Sentence(text[start:end], number, start)
        for number, text in enumerate(passages)
        for span in sentence_spans(text)
        for start, end in _within_pages(text, span)
        if _WORDED.search(text, start, end)
    ]


def _within_pages(text: str, span: tuple[int, int]) -> list[tuple[int, int]]:
    """A sentence's span cut at the page breaks inside it, each piece stripped of whitespace."""
    start, end = span
    if "\f" not in text[start:end]:
        return [span]
    pieces = []
    for piece in re.finditer(r"[^\f]+", text[start:end]):
        words = piece.group()
        lead = len(words) - len(words.lstrip())
        if words.strip():
            pieces.append((start + piece.start() + lead, start + piece.start() + len(words.rstrip())))
    return pieces


_WORDED = re.compile(r"[^\W_]")


# "how long/old/far ...": the adjective is the question's form (a duration, an age), not its topic.
_HOW_ADJECTIVE = re.compile(r"\bhow (long|old|far|often|big|large|high|tall|fast|heavy|deep|wide)\b", re.I)


def index_held_terms(
    question: str, shares: Callable[[Sequence[str]], Mapping[str, float]]
) -> tuple[frozenset[str], frozenset[str]]:
    """The question's terms held by `COLLECTION_SHARE` of the index's chunks or more (the
    collection's own subject), and those no chunk holds (the documents never use the word, so a
    subject it names, "... with husky", is one they never treat); `shares` gives each term's
    share of the chunks (`LexicalSearch.term_shares`)."""
    found = shares(sorted(question_terms(question)))
    everywhere = frozenset(term for term, share in found.items() if share >= COLLECTION_SHARE)
    return everywhere, frozenset(term for term, share in found.items() if share == 0)


def question_terms(question: str) -> set[str]:
    """The question's content terms: analysed words minus the words of its form."""
    terms = set(analyze(question))
    form = set(FORM_WORDS) | {t for m in _HOW_ADJECTIVE.finditer(question) for t in analyze(m.group(1))}
    form -= {t for m in _CODE_WORD.finditer(question) for t in analyze(m.group())}
    return (terms - form) or terms


# A word written as code names a setting, an option or a field ("Type=", "--name", "`kind`"),
# whatever English word it is: reference pages name their settings with ordinary words.
_CODE_WORD = re.compile(r"`[^`]+`|\b\w[\w.-]*=|(?<![\w-])--?\w[\w-]*")


def lexical_scores(
    question: str,
    sentences: Sequence[Sentence],
    headings: Sequence[str] | None = None,
    everywhere: frozenset[str] = frozenset(),
) -> list[float]:
    """Rarity-weighted share of the question's content terms each sentence contains.

    Args:
        headings: per sentence, the heading it sits under ("" for none), whose terms count as
            the sentence's own: a section's sentences rarely repeat what its heading says.
        everywhere: terms of the collection's own subject (`COLLECTION_SHARE`), held by every
            sentence; unless they are all the question asks about.
    """
    terms = question_terms(question)
    sets = [set(analyze(s.text)) for s in sentences]
    if headings is not None:
        sets = [found | set(analyze(heading)) if heading else found for found, heading in zip(sets, headings)]
    if not terms or not sets:
        return [0.0] * len(sentences)
    if terms - everywhere:
        sets = [found | (terms & everywhere) for found in sets]
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
    headings: Sequence[str] | None = None,
    everywhere: frozenset[str] = frozenset(),
) -> list[Sentence]:
    """Score every sentence against the question (see the module docstring).

    Args:
        question: the question.
        sentences: from `sentences_of`.
        embedder: optional; adds embedding cosine.
        question_vector: the question's embedding when already computed.
        lexical_weight: weight of the lexical part when an embedder is given.
        headings: per sentence, the heading it sits under (see `lexical_scores`).
        everywhere: terms of the collection's own subject (see `lexical_scores`).

    Returns:
        The sentences with scores, best first.
    """
    lexical = lexical_scores(question, sentences, headings, everywhere)
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
