"""The short line above the quoted evidence, behind one small seam: `Reader`.

A reader gets the question and the evidence that will be quoted (best sentence first) and
returns a `Short` (words of one quoted sentence) or None. Whatever it returns must occur
verbatim in that sentence: `checked` drops anything else, so a short line can never say
what the evidence under it does not.

- `TypedReader` (the built-in one, no model): only where the surface form decides. The
  question's first wh-word alone names the type: who/whom/whose -> a name of two or more
  capitalised words, when -> a date or year, how many/much/long/... -> a number with its unit
  (not a year), kept with its qualifier or range ("more than 70,000", "100–150"). What/which
  and open questions get no short line. The best sentence must hold exactly one span of that
  type that the question does not already hold (for "how many NOUN", with that noun beside
  it): where it holds two, choosing between them is a guess, and a wrong short line above
  right evidence misleads more than none. (Picking the one beside the counted noun among
  several numbers was tried: on the tune half of a factoid set it showed 5 more short lines,
  2 of them wrong.)
- `ragcli.answer.qa_reader.QAReader`: a local extractive QA model (BERT-family, SQuAD-tuned)
  given by path (`--reader PATH`); `ragcli.answer.qa_reader.reader_for` picks the reader a
  setting names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, Sequence

from ragcli.analysis import analyze
from ragcli.answer.sentences import Sentence


@dataclass(frozen=True)
class Short:
    """A short answer: its words and the quoted sentence they were read from."""

    text: str
    sentence: Sentence


class Reader(Protocol):
    """Reads the short answer from the evidence (best sentence first), or None."""

    def read(self, question: str, evidence: Sequence[Sentence]) -> Short | None: ...


_WH = re.compile(r"\b(who|whom|whose|when|where|what|which|why|how)\b(?:\s+(\w+))?", re.I)
_HOW_NUMBER = {"many", "much", "long", "old", "far", "big", "large", "high", "tall", "often"}
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_YEAR = r"\b(?:1[0-9]{3}|20[0-9]{2})\b"
_SEASON = r"(?i:(?:(?:early|late|mid)[\s-]+)?(?:spring|summer|autumn|fall|winter))"
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+(?:{_MONTHS})\.?,?\s+\d{{4}}|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|"
    rf"(?:{_MONTHS}|{_SEASON})\s+(?:of\s+)?\d{{4}}|\d{{4}}-\d{{2}}-\d{{2}})\b|{_YEAR}"
)
# A number keeps what qualifies it: "more than 70,000", "100–150 species", "1870 to 1939";
# without its qualifier or the range's other end, the short line says what the evidence does not.
_APPROXIMATELY = (
    r"(?i:(?:more|fewer|less)\s+than|over|under|about|around|approximately|nearly|almost|roughly|"
    r"some|up\s+to|at\s+(?:least|most)|as\s+(?:many|much)\s+as)"
)
_QUANTITY = r"\d(?:[\d,]*\d)?(?:\.\d+)?"
_NUMBER = re.compile(
    rf"(?<![\w.\-–])(?:{_APPROXIMATELY}\s+)?(?P<first>{_QUANTITY})(?:\s*[–—-]\s*{_QUANTITY}|\s+to\s+{_QUANTITY})?"
    r"(?:\s*(?:%|°\s?[CF]\b|(?P<unit>[^\W\d_]+)\b))?"
)
_LABELLED = re.compile(r"\S\s+[A-Z][\w'’-]*\s$")  # not a sentence's first word ("About 50")
# The number of a list item ("4. Shape the dough", "(2) Push") counts the steps, not the thing asked.
_LIST_NUMBER = re.compile(r"\s*(?:\d{1,3}[.)]|\(\d{1,3}\))(?=\s)")
_YEAR_ONLY = re.compile(r"1[0-9]{3}|20[0-9]{2}")
_NAME_WORD = r"(?:[A-Z]\.|[A-Z][\w'’-]*)"
_PARTICLE = r"(?:of|de|da|di|du|van|von|der|la|le|del|al|el|ibn|bin|ben)"
_NAME = re.compile(rf"\b{_NAME_WORD}(?:\s+(?:{_PARTICLE}\s+)?{_NAME_WORD})*")


def answer_type(question: str) -> str | None:
    """ "name", "date" or "number" from the question's first wh-word; None for any other question.

    Only the first one counts: in "What satellite was used when ..." the "when" joins a clause,
    and in "What enemy of Doctor Who ..." the "Who" is part of a title."""
    match = _WH.search(question)
    if match is None:
        return None
    word, following = match.group(1).lower(), (match.group(2) or "").lower()
    if word == "how":
        return "number" if following in _HOW_NUMBER else None
    if word == "when":
        return "date"
    return "name" if word in {"who", "whom", "whose"} else None


def spans_of(kind: str, text: str) -> list[tuple[int, int]]:
    """Character spans of the `kind` ("name", "date", "number") in `text`."""
    if kind == "date":
        return [m.span() for m in _DATE.finditer(text)]
    if kind == "number":  # a count is not a year ("in 2014"), a label ("Super Bowl 50") nor a step's number
        marker = _LIST_NUMBER.match(text)
        return [
            _with_unit(text, m)
            for m in _NUMBER.finditer(text)
            if not _YEAR_ONLY.fullmatch(m.group("first"))
            and not _LABELLED.search(text, 0, m.start())
            and not (marker and m.start() < marker.end())
        ]
    return [span for m in _NAME.finditer(text) if (span := _name_span(m)) is not None]


def _with_unit(text: str, match: re.Match) -> tuple[int, int]:
    """A number and the word after it when that is a content word ("11 sacks", not "5 in")."""
    unit = match.group("unit")
    if unit is not None and not analyze(unit):
        return match.start(), len(text[: match.start("unit")].rstrip())
    return match.span()


_DETERMINERS = frozenset(
    "a an the this that these those some any each every either neither no all both few many "
    "several most other another such".split()
)


def _name_span(match: re.Match) -> tuple[int, int] | None:
    """The span of a name: capitalised words less any leading determiner ("The", "Some"
    open sentences, not names), kept when two or more words remain: a lone capitalised
    word is as often an adjective, a demonym or half a name as a whole name."""
    start, end = match.span()
    words = list(re.finditer(r"\S+", match.group()))
    while words and words[0].group().lower() in _DETERMINERS:
        words.pop(0)
    if len(words) < 2:
        return None
    return start + words[0].start(), end


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
        if len(spans) != 1:  # none, or the surface form does not decide between them
            return None
        if kind == "number" and not _counting(question, sentence.text, spans):
            return None
        start, end = spans[0]
        return checked(Short(sentence.text[start:end].strip(" ,;:"), sentence), evidence)


_AUXILIARIES = frozenset("did does do was were is are has have had can could will would should".split())


_COUNTED = re.compile(r"\bhow\s+(?:many|much)\s+(\w+)(?:\s+(\w+))?", re.I)


def _counted_nouns(question: str) -> set[str]:
    """The stems of what "how many/much NOUN" counts ({"point"}; none for "how much does")."""
    match = _COUNTED.search(question)
    if match is None or match.group(1).lower() in _AUXILIARIES:
        return set()
    words = [word for word in match.groups() if word and word.lower() not in _AUXILIARIES]
    return {stem for word in words for stem in analyze(word)}


def _counting(question: str, sentence: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """For "how many/much NOUN", the numbers with that noun beside them: among the two words
    after it or the word before ("308 points", "308 total points", "tackles (118)"); a number
    in a sentence about other things is as often a different count as the one asked for."""
    nouns = _counted_nouns(question)
    if not nouns:
        return spans
    return [span for span in spans if nouns & set(analyze(_around(sentence, span)))]


def _around(text: str, span: tuple[int, int]) -> str:
    """The span with the word before it and the two after it."""
    before = re.findall(r"\w+", text[: span[0]])[-1:]
    after = re.findall(r"\w+", text[span[1] :])[:2]
    return " ".join([*before, text[span[0] : span[1]], *after])


def checked(short: Short | None, evidence: Sequence[Sentence]) -> Short | None:
    """`short`, its whitespace collapsed, when its words occur verbatim in a quoted sentence, else None."""
    if short is None or not short.text.strip():
        return None
    text = " ".join(short.text.split())  # one line: a name a page wrapped ("Henry\nWinstanley")
    return Short(text, short.sentence) if any(text in " ".join(s.text.split()) for s in evidence) else None
