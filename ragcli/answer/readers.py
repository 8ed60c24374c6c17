"""The short line above the quoted evidence, behind one small seam: `Reader`.

A reader gets the question and the evidence that will be quoted (best sentence first) and
returns a `Short` (words of one quoted sentence) or None. Whatever it returns must occur
verbatim in that sentence: `checked` drops anything else, so a short line can never say
what the evidence under it does not.

- `TypedReader` (the built-in one, no model): only where the surface form decides. The
  question's wh-word alone names the type: who/whom/whose -> a name of two or more capitalised
  words, when -> a
  date or year, how many/much/long/... -> a number with its unit (not a year). What/which and open
  questions get no short line. Among the spans of that type in the best sentence that the
  question does not already hold, the one nearest the question's own terms is chosen; a tie
  gives no short line.
- `ragcli.answer.qa_reader.QAReader`: a local extractive QA model (BERT-family, SQuAD-tuned)
  given by path (`--reader PATH`); `ragcli.answer.qa_reader.reader_for` picks the reader a
  setting names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, Sequence

from ragcli.analysis import analyze
from ragcli.answer.sentences import Sentence, question_terms


@dataclass(frozen=True)
class Short:
    """A short answer: its words and the quoted sentence they were read from."""

    text: str
    sentence: Sentence


class Reader(Protocol):
    """Reads the short answer from the evidence (best sentence first), or None."""

    def read(self, question: str, evidence: Sequence[Sentence]) -> Short | None: ...


_WH = re.compile(
    r"\b(who|whom|whose|when|how\s+(?:many|much|long|old|far|big|large|high|tall|often))\b", re.I
)
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_YEAR = r"\b(?:1[0-9]{3}|20[0-9]{2})\b"
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+(?:{_MONTHS})\.?,?\s+\d{{4}}|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|"
    rf"(?:{_MONTHS})\s+\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}})\b|{_YEAR}"
)
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s*(?:%|°\s?[CF]\b|[^\W\d_]+\b))?")
_YEAR_ONLY = re.compile(r"1[0-9]{3}|20[0-9]{2}")
_NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:(?:of|de|da|van|von|la|le|del|al)\s+)?[A-Z][\w'’-]*)*")


def answer_type(question: str) -> str | None:
    """ "name", "date" or "number" from the question's wh-word; None for any other question."""
    match = _WH.search(question)
    if match is None:
        return None
    word = match.group(1).lower()
    if word.startswith("how"):
        return "number"
    return "date" if word == "when" else "name"


def spans_of(kind: str, text: str) -> list[tuple[int, int]]:
    """Character spans of the `kind` ("name", "date", "number") in `text`."""
    if kind == "date":
        return [m.span() for m in _DATE.finditer(text)]
    if kind == "number":  # a count is not a year ("in 2014")
        return [_with_unit(text, m) for m in _NUMBER.finditer(text) if not _YEAR_ONLY.fullmatch(m.group())]
    return [m.span() for m in _NAME.finditer(text) if _is_name(text, m)]


def _with_unit(text: str, match: re.Match) -> tuple[int, int]:
    """A number and the word after it when that is a content word ("11 sacks", not "5 in")."""
    start, end = match.span()
    unit = text[start:end].split(maxsplit=1)
    if len(unit) == 2 and unit[1].isalpha() and not analyze(unit[1]):
        end = start + len(unit[0])
    return start, end


def _is_name(text: str, match: re.Match) -> bool:
    """Two or more capitalised words: a lone capitalised word is as often an adjective, a
    demonym or half a name ("Mongolian", "Simon" of "William E. Simon") as a whole name."""
    return len(match.group().split()) > 1


def _term_positions(sentence: str, terms: set[str]) -> list[tuple[int, int]]:
    """Where the question's terms occur in the sentence (character spans of the words)."""
    return [m.span() for m in re.finditer(r"\w+", sentence) if set(analyze(m.group())) & terms]


def _distance(span: tuple[int, int], positions: Sequence[tuple[int, int]]) -> int:
    """Characters between a span and the nearest question term (0 when they touch)."""
    return min((max(span[0] - end, start - span[1], 0) for start, end in positions), default=10**6)


class TypedReader:
    """The built-in reader (see the module docstring)."""

    def read(self, question: str, evidence: Sequence[Sentence]) -> Short | None:
        kind = answer_type(question)
        if kind is None or not evidence:
            return None
        sentence = evidence[0]
        asked = " ".join(question.lower().split())
        spans = [
            span
            for span in spans_of(kind, sentence.text)
            if sentence.text[span[0] : span[1]].lower() not in asked
        ]
        if not spans:
            return None
        positions = _term_positions(sentence.text, question_terms(question))
        ranked = sorted(spans, key=lambda span: _distance(span, positions))
        if len(ranked) > 1 and _distance(ranked[0], positions) == _distance(ranked[1], positions):
            return None
        start, end = ranked[0]
        return checked(Short(sentence.text[start:end].strip(" ,;:"), sentence), evidence)


def checked(short: Short | None, evidence: Sequence[Sentence]) -> Short | None:
    """`short` when its words occur verbatim in a quoted sentence, else None."""
    if short is None or not short.text.strip():
        return None
    text = " ".join(short.text.split())
    return short if any(text in " ".join(s.text.split()) for s in evidence) else None
