"""Evidence-first answers: the short answer when one is certain, always the quoted evidence.

The default answer without a capable model. A 135M model cannot write answers, but the
retrieved text holds them (the best sentence contains the gold answer ~84% of the time on
xquad-en), so the answer a user sees is built from that text:

- a **factoid** question (who/when/where/how many/what year/which ... : `is_factoid`) gets
  the short answer first when a typed span is confident (`confident_span`), then the
  sentence it came from, quoted, with its citation::

      Denver Broncos [1]
      "The American Football Conference (AFC) champion Denver Broncos defeated ..." [1]

- any other question (why/how/explain...), or a factoid without a confident span, gets the
  one to three best sentences, each quoted and cited.

It abstains with the extractive evidence gate (`ragcli.answer.extractive.is_answerable`). Each
citation's page is the page the quoted sentence is on (PDF pages are ``\\f``-separated in
the text), not the page its chunk starts on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from ragcli.answer.context import Source
from ragcli.answer.extractive import is_answerable, numbered_sources
from ragcli.answer.questions import question_type
from ragcli.answer.spans import Candidate, extract_answer, fits
from ragcli.embedding.base import Embedder
from ragcli.answer.sentences import Sentence, score_sentences, sentences_of
from ragcli.types import Hit

# Chosen on xquad-en's tune half (qa-tune.jsonl) with benchmarks/bench_answers.py:
# a span is shown when its score beats the runner-up by SPAN_MARGIN and its kind fits the question.
SPAN_MARGIN = 0.0
# "What proclamation/ruler/colony ...": a capitalised name gets this bonus (+0.024 f1 on qa-tune).
NAME_BONUS = 0.2
_AUXILIARIES = frozenset(
    "is are was were does do did has have had can could will would should may might".split()
)
# Extra sentences are quoted when they score at least this share of the best one's score.
SECOND_SENTENCE = 0.8
MAX_SENTENCES = 3
# Under a short answer: its sentence, and the next best one when it scores as close (the gold
# answer is in the best sentence 83% of the time, in one of the best two 91%, on qa-tune).
FACTOID_SENTENCES = 2
# Words a complete phrase neither starts nor ends with (prepositions, conjunctions, articles).
DANGLING = frozenset(
    "a an the of in on at to for from by with as and or but nor than that which who whom whose "
    "while when where if because since although into onto upon about over under between".split()
)
# Scripts written without spaces between words (Chinese, Japanese, Thai): no phrase rules apply.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\u0e00-\u0e7f]")
_OPEN_CLOSE = (("(", ")"), ("[", "]"), ("\u201c", "\u201d"))
# Questions asking for an explanation rather than a fact.
_NON_FACTOID = re.compile(
    r"^(why|how (?!many|much|long|old|large|big|far|high|tall|often|fast|heavy|deep|wide)\w+|"
    r"explain|describe|"
    r"summari[sz]e|what (is|are|was|were) the (reason|purpose|role|difference|effect|impact|process)|"
    r"what (does|do|did) .+ (mean|do|involve|refer to)|what happen(s|ed)?)\b"
)
# A lone ordinal says nothing on its own ("second" from "the second most populous city").
ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth last next".split())
# "What is the capital ...?" asks about now; "Melbourne was the capital ... until 1927" answers
# about then: the sentence is quoted, but its span is not shown as the short answer.
_ASKS_PRESENT = re.compile(r"^\W*(what|which|who|where)\s+(is|are)\b", re.I)
_BOUNDED_PAST = re.compile(r"\b(was|were)\b.*\b(until|till)\b", re.I)


@dataclass(frozen=True)
class Evidence:
    """What the evidence-first stage found.

    Attributes:
        text: the answer a user sees (short answer line, then quoted sentences with citations).
        short: the short answer without its citation, or None when none is shown.
        sources: the numbered passages read.
        abstained: the evidence was too weak.
        sentences: the quoted sentences, best first.
        pages: citation number -> page of the quoted sentence (only where pages are known).
    """

    text: str
    short: str | None
    sources: tuple[Source, ...]
    abstained: bool
    sentences: tuple[Sentence, ...] = ()
    pages: Mapping[int, int] = field(default_factory=dict)


def is_factoid(question: str) -> bool:
    """Whether the question asks for a fact (a name, date, number, thing), not an explanation."""
    text = " ".join(question.lower().split())
    match = re.search(r"\b(when|where|who|whom|whose|what|which|how|why|explain|describe)\b.*", text)
    return not _NON_FACTOID.search(match.group(0) if match else text)


def is_complete_phrase(text: str) -> bool:
    """No dangling function word at either end, balanced brackets and quotes, no clause break."""
    words = text.split()
    if not words:
        return False
    edges = (words[0].lower().strip("\"'(“”"), words[-1].lower().strip("\"')“”.,;:"))
    if edges[0] in DANGLING or edges[1] in DANGLING:
        return False
    if text.rstrip()[-1:] in ",;:" or any(text.count(a) != text.count(b) for a, b in _OPEN_CLOSE):
        return False
    return text.count('"') % 2 == 0 and ";" not in text


# The span kinds that answer each question type ("1519" is found as a number, and is a date).
_TYPED = {
    "number": ("number",),
    "date": ("date", "number"),
    "person": ("name",),
    "place": ("name", "phrase"),
    "thing": ("name", "phrase", "number", "date"),
}


def is_plausible(candidate: Candidate) -> bool:
    """A complete phrase on one line, and not a lone letter, a possessive without its noun, a
    lone sentence opener ("Many", "However") or a lone verb or adverb form ("launched")."""
    text = candidate.text
    words = text.split()
    if not is_complete_phrase(text) or "\n" in text or len(text) <= 1:
        return False
    if text.endswith(("'s", "’s")):  # a possessive without its noun: "Melbourne's"
        return False
    if len(words) == 1 and candidate.kind in ("name", "phrase") and candidate.first == 0:
        return False
    if len(words) == 1 and words[0].lower() in ORDINALS:
        return False
    lone_verb = (
        len(words) == 1 and candidate.kind == "phrase" and words[0].lower().endswith(("ed", "ly", "ing"))
    )
    return not lone_verb


def _names_a_thing(question: str) -> bool:
    """ "What proclamation ...", "Which ruler ...": a "what/which <noun>" question (not "what is")."""
    match = re.search(r"\b(what|which)\s+(\w+)", question.lower())
    return bool(match) and match.group(2) not in _AUXILIARIES and question_type(question) == "thing"


def abbreviates_question(text: str, question: str) -> bool:
    """An acronym of the question's own words ("ENR" for "Engineering News-Record"): no answer."""
    if not re.fullmatch(r"[A-Z]{2,6}", text):
        return False
    initials = "".join(word[0] for word in re.findall(r"[A-Z][\w']*", question))
    return text in initials


def confident_span(question: str, sentence: Sentence) -> Candidate | None:
    """The best span of `sentence` if it is typed right, a complete phrase and clearly ahead.
    Spans are found by English rules: a question or sentence in another script gets none."""
    if not re.search(r"[A-Za-z]", question) or _UNSPACED.search(sentence.text):
        return None
    found = [
        c
        for c in extract_answer(question, [sentence], limit=10)
        if is_plausible(c) and not abbreviates_question(c.text, question)
    ]
    if _names_a_thing(question):
        found = sorted(
            (replace(c, score=c.score + NAME_BONUS) if c.kind == "name" else c for c in found),
            key=lambda c: -c.score,
        )
    if not found:
        return None
    best, qtype = found[0], question_type(question)
    if best.kind not in _TYPED[qtype] or (qtype in ("date", "number") and not fits(question, best)):
        return None  # "Seven Years" is no date, "43.8%" no count
    runner_up = found[1].score if len(found) > 1 else float("-inf")
    return best if best.score - runner_up >= SPAN_MARGIN else None


def is_outdated(question: str, sentence: Sentence) -> bool:
    """A present-tense question ("What is the capital ...?") and a sentence saying what held
    until some time ("Melbourne was the capital ... until 1927"): no short answer from it."""
    return bool(_ASKS_PRESENT.search(question)) and bool(_BOUNDED_PAST.search(sentence.text))


def page_of(source: Source, sentence: Sentence) -> int | None:
    """The page `sentence` is on: its source's first page plus the page breaks before it."""
    if source.page is None:
        return None
    return source.page + source.text.count("\f", 0, sentence.start)


def is_title(text: str) -> bool:
    """A heading or a title line ("Victoria (Australia)"): short, no full stop; no evidence."""
    text = text.strip()
    short = len(text.split()) < 5 and len(text) < 40  # (CJK text has no spaces: count characters too)
    return text.startswith("#") or (short and not text.endswith((".", "!", "?", "。", "！", "？")))


def is_prose(text: str) -> bool:
    """A sentence worth quoting beside the best one: not a heading or table row, 5+ words."""
    return not text.lstrip().startswith(("#", "|")) and len(text.split()) >= 5


def quote(sentence: Sentence) -> str:
    return f'"{" ".join(sentence.text.split())}" [{sentence.passage + 1}]'


def best_sentences(ranked: Sequence[Sentence], limit: int = MAX_SENTENCES) -> list[Sentence]:
    """The best sentence and the next ones scoring close to it (at most `limit`)."""
    best = ranked[0]
    chosen = [best]
    for sentence in ranked[1:]:
        if len(chosen) >= limit:
            break
        if (
            sentence.score >= SECOND_SENTENCE * best.score
            and sentence.lexical > 0
            and sentence.text != best.text
            and is_prose(sentence.text)
        ):
            chosen.append(sentence)
    return chosen


def rank_sentences(
    question: str, hits: Sequence[Hit], *, embedder: Embedder | None = None, passages: int = 3
) -> tuple[tuple[Source, ...], list[Sentence]]:
    """The best `passages` hits as numbered sources, and all their sentences scored, best first."""
    sources = tuple(numbered_sources(hits, passages))
    return sources, rank_source_sentences(question, sources, embedder=embedder)


def rank_source_sentences(
    question: str, sources: Sequence[Source], *, embedder: Embedder | None = None
) -> list[Sentence]:
    """Every sentence of the sources (headings left out) scored against the question, best first;
    ``Sentence.passage`` is the index of its source."""
    sentences = [s for s in sentences_of([s.text for s in sources]) if not is_title(s.text)]
    return score_sentences(question, sentences, embedder=embedder)


def excerpts(
    sources: Sequence[Source], ranked: Sequence[Sentence], *, budget: int, count_tokens
) -> list[Source]:
    """The sources cut down to their best sentences within `budget` tokens (for a prompt).

    Sentences are taken best first while they fit, then each source shows its chosen
    sentences in document order; sources with none chosen are left out, numbers are kept.
    """
    chosen: dict[int, list[Sentence]] = {}
    used = 0
    for sentence in ranked:
        cost = count_tokens(sentence.text) + 1
        if used + cost > budget:
            continue
        chosen.setdefault(sentence.passage, []).append(sentence)
        used += cost
    result = []
    for index, source in enumerate(sources):
        if index in chosen:
            text = " ".join(s.text for s in sorted(chosen[index], key=lambda s: s.start))
            result.append(replace(source, text=text))
    return result


def supporting_sentence(answer: str, ranked: Sequence[Sentence], cited: Sequence[int]) -> Sentence | None:
    """The sentence to quote under a generated answer: the best one of a cited source holding
    the answer's words, else the best of a cited source, else the best one."""
    words = set(re.findall(r"\w+", answer.lower()))
    pool = [s for s in ranked if s.passage + 1 in cited] or list(ranked)
    for sentence in pool:
        if words and words <= set(re.findall(r"\w+", sentence.text.lower())):
            return sentence
    return pool[0] if pool else None


def answer_with_evidence(
    question: str, hits: Sequence[Hit], *, embedder: Embedder | None = None, passages: int = 3
) -> Evidence:
    """The `rag ask` evidence-first stage (see the module docstring).

    Args:
        question: the question.
        hits: retrieved hits, best first.
        embedder: scores sentences by cosine too (None: lexical only).
        passages: how many of the best hits to read.
    """
    sources, ranked = rank_sentences(question, hits, embedder=embedder, passages=passages)
    best = ranked[0] if ranked else None
    if best is None or not is_answerable(best):
        return Evidence("", None, sources, True, (best,) if best else ())
    factual = is_factoid(question) and not is_outdated(question, best)
    span = confident_span(question, best) if factual else None
    quoted = best_sentences(ranked, FACTOID_SENTENCES if span is not None else MAX_SENTENCES)
    lines = [f"{span.text} [{best.passage + 1}]"] if span is not None else []
    lines += [quote(sentence) for sentence in quoted]
    pages = {}
    for sentence in quoted:
        page = page_of(sources[sentence.passage], sentence)
        if page is not None:
            pages.setdefault(sentence.passage + 1, page)
    return Evidence("\n".join(lines), span.text if span else None, sources, False, tuple(quoted), pages)
