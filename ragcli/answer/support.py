"""Answer-support annotation, after RAGTools' ``annotate_support``.

1. The answer is cut into sentences at line breaks and by the splitter that cuts the sources
   (`ragcli.text.sentence_spans`: "3.14" and "U.S. Army" stay whole, full-width
   Chinese terminators end a sentence). Citation markers such as ``[2]`` are kept with the
   sentence they follow but not scored.
2. Each sentence is scored against each source by **content-word overlap**: the share of
   the sentence's BM25 terms (`ragcli.analysis.analyze`: stemmed, stop words
   removed, CJK bigrams) that occur in the source. With an embedder, the score is the mean
   of that overlap and the cosine similarity of sentence and source (negative cosines count
   as 0), so a faithful paraphrase is not marked unsupported for using other words.
3. The best source and its score label the sentence:

   - ``supported``: score >= 0.6 (most content words come from that source),
   - ``partial``: 0.3 <= score < 0.6,
   - ``unsupported``: below 0.3.

   A sentence is never ``supported`` when one of its specific tokens is missing from that
   source: a number ("1823" where the source says 1698), a capitalised name, or a code token
   ("mkdtemp()", "--soft", "os.path.join"); a missing number makes it ``unsupported`` (it
   contradicts the source). A sentence with no content words at all gets no label (it is
   left out: "6" or "N-" alone say nothing that could be checked).

   The thresholds are RAGTools' spirit (a sentence is "supported" when most of it can be
   traced to the context) tuned so that copying a source clause scores ~1.0 and a generic
   sentence sharing one word scores well under 0.3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ragcli.answer.context import Source
from ragcli.analysis import analyze
from ragcli.text import sentence_spans

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder

SUPPORTED = 0.6
PARTIAL = 0.3
LABELS = ("supported", "partial", "unsupported")

_CITATION = re.compile(r"\[\d[\d,\s]*\]")


@dataclass(frozen=True)
class SentenceSupport:
    """How well one answer sentence is backed by the sources.

    Attributes:
        sentence: the sentence as written in the answer.
        label: "supported", "partial" or "unsupported".
        score: 0..1, the best source's score.
        source: the best source's number, or None when no source shares anything with it.
    """

    sentence: str
    label: str
    score: float
    source: int | None


# A quoted line: the quote, then the sources it cites (``"..." [1] [3]``).
QUOTE_LINE = re.compile(r'\s*"(.+)"(?:\s*\[\d+\])*\s*')


def split_sentences(text: str) -> list[str]:
    """Cut an answer into sentences line by line, with the splitter that cuts the sources
    (`ragcli.text.sentence_spans`); a citation written after a sentence's end
    ("... flour. [1] Tea ...") stays with that sentence. A quoted line is one sentence of its
    source, whole: cut again, a quoted step ('"2. Add the salt." [1]') fell apart at its number
    and no longer read as a quote."""
    found = []
    for line in text.splitlines():
        if QUOTE_LINE.fullmatch(line):
            found.append(line.strip())
            continue
        spans: list[list[int]] = []
        for start, end in sentence_spans(line):
            cited = _LEADING_CITATIONS.match(line, start, end)
            if cited and spans:
                spans[-1][1], start = cited.end(), cited.end()
            if line[start:end].strip():
                spans.append([start, end])
        found += [line[start:end].strip() for start, end in spans]
    return found


_LEADING_CITATIONS = re.compile(r"(?:\s*\[\d[\d,\s]*\])+")


def label_for(score: float) -> str:
    """The support label of a score (thresholds in the module docstring)."""
    if score >= SUPPORTED:
        return "supported"
    return "partial" if score >= PARTIAL else "unsupported"


def overlap(sentence_terms: set[str], source_terms: set[str]) -> float:
    """Share of the sentence's content terms found in the source (0 when it has none)."""
    if not sentence_terms:
        return 0.0
    return len(sentence_terms & source_terms) / len(sentence_terms)


def annotate_support(
    answer: str, sources: Sequence[Source], *, embedder: Embedder | None = None
) -> tuple[SentenceSupport, ...]:
    """Label every sentence of `answer` with its best source and a support score.

    Args:
        answer: the generated answer text.
        sources: the numbered sources the model was given.
        embedder: optional; adds embedding similarity to the word-overlap score.

    Returns:
        One `SentenceSupport` per sentence, in answer order.
    """
    sentences = [s for s in split_sentences(answer) if has_content(s) and not is_note(s)]
    if not sentences:
        return ()
    scores = _overlap_matrix(sentences, sources)
    if embedder is not None and sources:
        scores = (scores + _cosine_matrix(embedder, sentences, sources)) / 2
    return tuple(_annotate(sentence, row, sources) for sentence, row in zip(sentences, scores))


def _overlap_matrix(sentences: Sequence[str], sources: Sequence[Source]) -> np.ndarray:
    source_terms = [set(analyze(source.text)) for source in sources]
    matrix = np.zeros((len(sentences), len(sources)), dtype=np.float64)
    for row, sentence in enumerate(sentences):
        terms = set(analyze(_CITATION.sub(" ", sentence)))
        for column, terms_of_source in enumerate(source_terms):
            matrix[row, column] = overlap(terms, terms_of_source)
    return matrix


def _cosine_matrix(embedder: Embedder, sentences: Sequence[str], sources: Sequence[Source]) -> np.ndarray:
    texts = [_CITATION.sub(" ", s) for s in sentences] + [s.text for s in sources]
    vectors = np.asarray(embedder.embed(texts))
    sentence_vectors, source_vectors = vectors[: len(sentences)], vectors[len(sentences) :]
    return np.clip(sentence_vectors @ source_vectors.T, 0.0, 1.0)


_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_CODE = re.compile(r"(?:--?[A-Za-z][\w-]*|\b\w+(?:[._]\w+)+(?:\(\))?|\b\w+\(\))")
_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][\w'-]+")


def is_note(sentence: str) -> bool:
    """A line ragcli writes about the answer itself, in parentheses ("(the list continues in
    [1])", "(no passage found mentions ...)"): no claim a source could support."""
    text = sentence.strip()
    return text.startswith("(") and text.endswith(")")


def has_content(sentence: str) -> bool:
    """Whether the sentence has a content word (a term with a letter, longer than one character):
    a bare "6" or "N-" asserts nothing that could be checked."""
    return any(len(t) > 1 and any(c.isalpha() for c in t) for t in analyze(_CITATION.sub(" ", sentence)))


def specific_tokens(sentence: str) -> tuple[list[str], list[str]]:
    """The sentence's numbers, and its names and code tokens (what a source must hold)."""
    text = _CITATION.sub(" ", sentence)
    return _NUMBER.findall(text), _CODE.findall(text) + _NAME.findall(text)


def _annotate(sentence: str, row: np.ndarray, sources: Sequence[Source]) -> SentenceSupport:
    if not len(row) or float(row.max()) <= 0.0:
        return SentenceSupport(sentence, "unsupported", 0.0, None)
    best = int(row.argmax())
    score = round(float(row[best]), 4)
    label = label_for(score)
    numbers, names = specific_tokens(sentence)
    source = " ".join(sources[best].text.split())
    if any(number not in source for number in numbers):
        label = "unsupported"
    elif label == "supported" and any(name not in source for name in names):
        label = "partial"
    return SentenceSupport(sentence, label, score, sources[best].number)
