"""Extractive answers: the words of a retrieved sentence that answer the question.

A 135M-parameter model cannot be trusted to write a factual answer (EM 0.00 on xquad-en
even with the right passage), but the retrieved text usually holds one. So:

1. `question_type` reads the question's form: *number* (how many/much/long/old, what
   percentage), *date* (when, what year/century), *person* (who, whom, whose), *place*
   (where, in what city/country), else *thing*.
2. `candidates` proposes spans of a sentence: numbers with their unit, dates, capitalised
   name sequences, and the runs of words between the question's own words; spans made of
   question words are never proposed (the answer is what the question does not say).
3. Each candidate is scored (`Candidate.score`): the sentence's relevance, a bonus when its
   kind fits the question type, a bonus for sitting next to the question's words in the
   sentence, and a small penalty per word beyond the few a factual answer needs.
4. `extract_answer` returns the best candidates over the best sentences.
5. `answer_extractively` is the `rag ask` stage: number the top passages as sources, pick
   their best sentences (`ragcli.answer.sentences`), abstain when the best sentence is too weak
   evidence (`is_answerable`), else answer with the best span and its citation ``[n]``.
   With ``style="sentence"`` the whole best sentence is the answer instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from ragcli.answer.context import Source, build_context
from ragcli.analysis import STOP_WORDS, analyze
from ragcli.answer.phrases import (
    ADVERBS,
    AUXILIARIES,
    NUMBER_WORDS,
    VERBS,
    Word,
    noun_phrases,
    word_classes,
    words_of,
)
from ragcli.answer.sentences import (
    FORM_WORDS,
    Embedder,
    Sentence,
    question_terms,
    score_sentences,
    sentences_of,
)
from ragcli.types import Hit

MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
# Words of a name that are no name on their own.
TITLES = frozenset(
    "Lord Lady Sir Dame King Queen Prince Princess Duke Count Earl Baron Emperor Pope Saint St Mr Mrs Ms "
    "Dr Professor President General Major Colonel Captain Lieutenant Admiral Governor Bishop".split()
)
# Lower-case words allowed inside a capitalised name ("University of Chicago", "Charles de Gaulle").
NAME_GLUE = frozenset("of de da von van der du la le and the for".split())
# Words that start or end no answer: stop words plus auxiliaries, pronouns and linkers.
EDGE_WORDS = STOP_WORDS | frozenset(
    "is are was were be been being has have had do does did which who whom whose that also its his her "
    "their our from than so however although while when where whereas because since known called".split()
)
ARTICLES = frozenset(("a", "an", "the"))
# Score parts (tuned on xquad-en with benchmarks/bench_answers.py).
TYPE_BONUS = 0.5
NEAR_BONUS = 0.05
LENGTH_PENALTY = 0.02
IDEAL_WORDS = 6
MAX_WORDS = 8
SANDWICH_PENALTY = 0.4
QUESTION_WORD_PENALTY = 0.05
CUE_BONUS = 0.1
COUNTED_BONUS = 0.1
HEAD_BONUS = 0.2

# "which Florida *city*", "during which *years*": the type from the noun the question names.
HEAD_TYPES = (
    ("date", frozenset("year years century centuries decade decades date dates month months era".split())),
    ("number", frozenset("percentage percent number amount proportion fraction".split())),
    (
        "person",
        frozenset(
            "person people man woman king queen president emperor ruler leader scientist poet writer "
            "author artist composer historian philosopher general commander explorer architect "
            "inventor player".split()
        ),
    ),
    (
        "place",
        frozenset(
            "city cities country countries state place region town continent colony province island "
            "county nation location village".split()
        ),
    ),
)
_TYPES = (
    (
        "date",
        re.compile(
            r"^(when|what (year|years|century|decade|date|day|month|time|period|era)|"
            r"in (what|which) (year|century|decade|month))\b"
        ),
    ),
    (
        "number",
        re.compile(
            r"^(how (many|much|long|old|large|big|far|high|tall|often|fast|heavy|deep|wide)|"
            r"what (percentage|percent|number|amount|proportion|fraction|share|size|age)|"
            r"what (is|was|are|were) (the |its |their )?([\w-]+'s )?"
            r"(population|percentage|number|amount|cost|price|ratio|total)\b|"
            r"(at|to|by) what (age|rate|speed|temperature|percentage))\b"
        ),
    ),
    (
        "person",
        re.compile(
            r"^(who|whom|whose|(what|which) (person|man|woman|king|president|emperor|leader|"
            r"scientist|team|company|group|organization|player|author))\b"
        ),
    ),
    (
        "place",
        re.compile(
            r"^(where|(in|to|from|at) (what|which) (city|country|state|place|region|town|"
            r"continent|area|part)|"
            r"(what|which) (city|country|state|place|region|town|continent))\b"
        ),
    ),
)


@dataclass(frozen=True)
class Candidate:
    """A span of a sentence proposed as the answer.

    Attributes:
        text: the span, verbatim from the sentence.
        kind: "number", "date", "name" or "run".
        sentence: the sentence it came from.
        score: higher is better (see the module docstring).
        first, last: the span's first and last word index in the sentence (`words_of`).
    """

    text: str
    kind: str
    sentence: Sentence
    score: float
    first: int = 0
    last: int = 0


def question_type(question: str) -> str:
    """The kind of answer the question asks for: date, number, person, place or thing."""
    text = " ".join(question.lower().split())
    # "When imperialism impacts a state, what is it called?": the main clause follows the comma.
    text = re.sub(
        r"^(when|if|while|after|before|since|because|once)\b[^,]*, (?=(what|which|who|how)\b)", "", text
    )
    # "In 1066, who ..." and "The Normans were from where?": look at the clause with the wh-word.
    match = re.search(r"\b(when|where|who|whom|whose|what|which|how)\b.*", text)
    head = match.group(0) if match else text
    prefix = re.search(r"\b(in|to|from|at|by) (what|which)\b.*", text)
    for kind, pattern in _TYPES:
        if pattern.search(head) or (prefix and pattern.search(prefix.group(0))):
            return kind
    named = head_nouns(question)
    return next((kind for kind, nouns in HEAD_TYPES if nouns & set(named)), "thing")


def is_number(word: str) -> bool:
    lowered = word.lower()
    return any(ch.isdigit() for ch in word) or lowered in NUMBER_WORDS


def is_year(word: str) -> bool:
    return bool(re.fullmatch(r"(1[0-9]|20)\d\d(s)?|\d{1,2}(st|nd|rd|th)", word.lower()))


def is_capitalised(word: str) -> bool:
    return word[:1].isupper()


def _spans(words: Sequence[Word], keep) -> list[tuple[int, int]]:
    """Maximal runs ``[i, j)`` of words where ``keep(i)`` holds."""
    runs, start = [], None
    for i in range(len(words) + 1):
        if i < len(words) and keep(i):
            start = i if start is None else start
        elif start is not None:
            runs.append((start, i))
            start = None
    return runs


def _abbreviated(word: str) -> bool:
    """An initial or a title a full stop follows: "W", "U.S", "St", "Mt"."""
    return (
        (len(word) == 1 and word.isupper()) or bool(re.fullmatch(r"([A-Z]\.)+[A-Z]", word)) or word in _SHORT
    )


_SHORT = frozenset("St Mt Ft Dr Mr Mrs Ms Jr Sr".split())


def _joined(previous: Word, gap: str) -> bool:
    """Only spaces between two words, or the full stop of an initial or title ("Frederick W. Mote",
    "St. Johns River")."""
    initial = _abbreviated(previous.text) and gap.startswith(". ")
    possessive = gap.startswith(("' ", "’ ")) and previous.text.endswith("s")  # "Seven Years' War"
    return not (gap[1:] if initial or possessive else gap).strip()


def _unit_gap(gap: str) -> bool:
    """Nothing but spaces or a degree sign between a number and its unit ("250 °C")."""
    return gap.replace("°", "").strip() == ""


def _split_at(runs: Sequence[tuple[int, int]], joined: Sequence[bool]) -> list[tuple[int, int]]:
    """The runs cut where punctuation stands between two words ("69,284 (43.8%)": two numbers)."""
    result = []
    for i, j in runs:
        cuts = [i] + [k for k in range(i + 1, j) if not joined[k]] + [j]
        result.extend(zip(cuts, cuts[1:]))
    return result


def _kinds(
    words: Sequence[Word], classes: Sequence[str], in_question: Sequence[bool], text: str
) -> list[tuple[str, int, int]]:
    """Candidate ``(kind, i, j)`` word ranges of one sentence."""
    found: list[tuple[str, int, int]] = []
    # joined[k]: only spaces between word k-1 and word k (a comma or bracket ends a name).
    joined = [
        k > 0 and _joined(words[k - 1], text[words[k - 1].end : words[k].start]) for k in range(len(words))
    ]
    for i, j in _split_at(_spans(words, lambda k: is_number(words[k].text)), joined):
        # A number takes its unit ("308 points", "1.2 million tons") when the unit is not asked.
        unit = j < len(words) and _unit_gap(text[words[j - 1].end : words[j].start])
        unit = unit and not in_question[j] and classes[j] == "open"
        end = j + 1 if unit else j
        found.append(("number", i, end))
    for i, j in _spans(
        words,
        lambda k: (
            is_year(words[k].text)
            or words[k].text.lower() in MONTHS
            or (words[k].text.isdigit() and len(words[k].text) <= 2)
        ),
    ):
        if any(is_year(w.text) or w.text.lower() in MONTHS for w in words[i:j]):
            found.append(("date", i, j))
    for i, j in _conjuncts(words, _name_runs(words, joined)):
        # Only the front is trimmed: "Montreal" is no name where "Montreal Protocol" is one.
        if k := _trim_front(words, in_question, i, j):
            found.append(("name", *k))
    for i, j in noun_phrases(text, words):
        found.extend(("phrase", *span) for span in _phrase_spans(words, in_question, i, j))
    return found


def _phrase_spans(words: Sequence[Word], in_question: Sequence[bool], i: int, j: int) -> set[tuple[int, int]]:
    """A noun phrase without its leading article, and without the question's words in front."""
    while i < j and words[i].text.lower() in ARTICLES:
        i += 1
    spans = {(i, j)} if i < j else set()
    # Only the front is trimmed: the last word is the phrase's head, and "independent" is no
    # answer where "independent schools" is.
    while i < j - 1 and (in_question[i] or words[i].text.lower() in EDGE_WORDS):
        i += 1
        spans.add((i, j))
    return spans


def _name_runs(words: Sequence[Word], joined: Sequence[bool]) -> list[tuple[int, int]]:
    """Runs of capitalised words (with `NAME_GLUE` between them) not broken by punctuation."""

    def glue(k: int) -> bool:
        return (
            words[k].text.lower() in NAME_GLUE
            and k + 1 < len(words)
            and is_capitalised(words[k + 1].text)
            and joined[k + 1]
        )

    runs, start = [], None
    for k in range(len(words) + 1):
        named = k < len(words) and (is_capitalised(words[k].text) or glue(k))
        if named and start is not None and joined[k]:
            continue
        if start is not None:
            runs.append((start, k))
            start = None
        if named and is_capitalised(words[k].text) and not (k == 0 and _opener(words[0].text)):
            start = k
    return runs


def _conjuncts(words: Sequence[Word], runs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs, and the names an "and" joins in them, each alone ("Friedrich Ratzel of Germany
    and *Halford Mackinder*"): is it one name ("Tyne and Wear") or two? The score decides."""
    result = list(runs)
    for i, j in runs:
        cuts = [i] + [k for k in range(i + 1, j - 1) if words[k].text == "and"] + [j]
        if len(cuts) > 2:
            result.extend((a + (a > i), b) for a, b in zip(cuts, cuts[1:]))
    return result


def _opener(word: str) -> bool:
    """A sentence's first word that is capitalised for being first: "Following", "Earlier"."""
    lowered = word.lower()
    return lowered in EDGE_WORDS or lowered in ADVERBS or lowered.endswith(("ing", "ed", "ly", "er"))


def _trim_front(words: Sequence[Word], in_question: Sequence[bool], i: int, j: int) -> tuple[int, int] | None:
    """Drop question words and stop words from the front of ``[i, j)`` and stop words from its
    end; None if nothing is left."""
    while i < j and (in_question[i] or words[i].text.lower() in EDGE_WORDS):
        i += 1
    while j > i and words[j - 1].text.lower() in EDGE_WORDS:
        j -= 1
    return (i, j) if i < j else None


_FITS = {
    "number": ("number",),
    "date": ("date", "number"),
    "person": ("name",),
    "place": ("name",),
    "thing": ("name", "phrase"),
}


def candidates(question: str, sentence: Sentence, *, qtype: str | None = None) -> list[Candidate]:
    """Spans of `sentence` that could answer `question`, scored (see the module docstring)."""
    qtype = qtype or question_type(question)
    terms = question_terms(question)
    words = words_of(sentence.text)
    in_question = [bool(set(analyze(w.text)) & terms) for w in words]
    asked = [k for k, hit in enumerate(in_question) if hit]
    counted = counted_noun(question) if qtype == "number" else None
    share = _asks_share(question)
    head = head_words(question)
    subject = asks_subject(question)
    result = []
    classes = word_classes(words, sentence.text)
    for kind, i, j in _kinds(words, classes, in_question, sentence.text):
        if _says_nothing(words, in_question, i, j) or _lone_opener(words, kind, i, j):
            continue
        j = min(j, i + MAX_WORDS)
        counts = kind == "number" and _counts(words, counted, i, j)
        # (a line break inside a sentence is wrapping: "Henry\nWinstanley" is shown on one line)
        end = words[j - 1].end + (1 if _abbreviated(words[j - 1].text) and "." in words[j - 1].text else 0)
        text = " ".join(sentence.text[words[i].start : end].split())
        score = (
            sentence.score
            + (TYPE_BONUS if _fits(qtype, kind, words[i:j], share=share) else 0.0)
            + _nearness(asked, i, j, subject=subject)
            - LENGTH_PENALTY * max(0, (j - i) - IDEAL_WORDS)
            - QUESTION_WORD_PENALTY * sum(in_question[i:j])
            - (SANDWICH_PENALTY if _sandwiched(in_question, i, j) and not counts else 0.0)
            + (CUE_BONUS if _cued(words, classes, in_question, i, j, sentence.text) else 0.0)
            + (COUNTED_BONUS if counts else 0.0)
            + (HEAD_BONUS if head and _headed(words, head, i, j) else 0.0)
        )
        result.append(Candidate(text, kind, sentence, score, i, j - 1))
    # Between equals the longer span: a whole coordination, not its first half.
    return sorted(result, key=lambda c: (-c.score, -(c.last - c.first)))


def _says_nothing(words: Sequence[Word], in_question: Sequence[bool], i: int, j: int) -> bool:
    """Every word is the question's own or a function word ("these *devices*")."""
    return all(in_question[k] or words[k].text.lower() in EDGE_WORDS for k in range(i, j))


_WHAT_NOUN = re.compile(r"\b(?:what|which)\s+(?:(?:type|kind|sort|form|genre|class)s?\s+of\s+)?(.*)")


def head_nouns(question: str) -> list[str]:
    """The words naming what a "what/which" question asks for ("What *court case* ...", "Which
    *Florida city* ..."): the words before its verb, at most three (the first when no verb shows)."""
    match = _WHAT_NOUN.search(question.lower())
    if not match:
        return []
    words = re.findall(r"[\w-]+", match.group(1))[:4]
    if not words or words[0] in AUXILIARIES:
        return []
    verb = next((k for k, w in enumerate(words) if w in AUXILIARIES or w.endswith("ed")), None)
    return words[:verb] if verb is not None else words[:1]


def head_words(question: str) -> set[str]:
    """The stems of `head_nouns`: the answer is often a phrase ending with one ("the landmark
    court case")."""
    return set(analyze(" ".join(head_nouns(question)))) - FORM_WORDS


def _headed(words: Sequence[Word], head: set[str], i: int, j: int) -> bool:
    """The span ends with the question's head noun, or stands right after it (an apposition)."""
    last = set(analyze(words[j - 1].text))
    # "poet *Percy Shelley*", "the colony of *Virginia*"
    k = i - 2 if i > 1 and words[i - 1].text.lower() == "of" else i - 1
    before = set(analyze(words[k].text)) if k >= 0 else set()
    return bool((last | before) & head) and (j - i > 1 or bool(before & head))


def counted_noun(question: str) -> str | None:
    """The stem of what a "how many" question counts ("How many *points* did they score?")."""
    match = re.search(r"\bhow many (\w+)", question.lower())
    stems = analyze(match.group(1)) if match else []
    return stems[0] if stems else None


def _counts(words: Sequence[Word], counted: str | None, i: int, j: int) -> bool:
    """The number is of the counted thing: it names it in its unit or right after ("11 points",
    "tackles (118)")."""
    near = [w.text for w in words[max(0, i - 1) : j + 2]]
    return counted is not None and any(counted in analyze(word) for word in near)


# A span right after these words is what the sentence names ("are called *independent schools*").
NAMING = frozenset("called named termed titled dubbed nicknamed".split())
COPULAS = frozenset("is are was were".split())
_QUOTES = ('"', "\u201c", "\u201d", "'")


def _cued(
    words: Sequence[Word], classes: Sequence[str], in_question: Sequence[bool], i: int, j: int, text: str
) -> bool:
    """The sentence names the span: after "called" or "known/referred to as", next to a copula
    whose other side holds the question's words ("The first settlement in Newcastle was *Pons
    Aelius*", "*Reserved matters* are subjects outside ..."), or in quotes."""
    start = i
    while i and words[i - 1].text.lower() in ARTICLES:
        i -= 1
    before = [w.text.lower() for w in words[max(0, i - 3) : i]]
    if before[-1:] and (before[-1] in NAMING or _named_as(before)):
        return True
    if before[-1:] and before[-1] in COPULAS and any(in_question[: i - 1]):
        return True
    # (the copula of a predicate, not of a passive: "A piece of paper was later found ...")
    predicate = j + 1 < len(words) and classes[j + 1] in ("det", "open", "number")
    if predicate and words[j].text.lower() in COPULAS and any(in_question[j + 1 :]):
        return True
    return (
        text[words[start].start - 1 : words[start].start] in _QUOTES
        and text[words[j - 1].end : words[j - 1].end + 1] in _QUOTES
    )


def _named_as(before: Sequence[str]) -> bool:
    """ "known as", "referred to as", "regarded as": the words before end a naming phrase."""
    if not before or before[-1] != "as" or len(before) < 2:
        return False
    verb = before[-3] if before[-2] == "to" and len(before) > 2 else before[-2]
    return verb == "known" or verb.endswith("ed")


def fits(question: str, candidate: Candidate) -> bool:
    """Whether `candidate` is of the kind `question` asks for (see `_fits`)."""
    words = words_of(candidate.sentence.text)[candidate.first : candidate.last + 1]
    return _fits(question_type(question), candidate.kind, words, share=_asks_share(question))


def _asks_share(question: str) -> bool:
    return bool(re.search(r"\b(percent|percentage|proportion|share|rate)\b", question.lower()))


def _fits(qtype: str, kind: str, words: Sequence[Word], *, share: bool = False) -> bool:
    """The span is of the kind the question asks for: for a date, a number only if it is a year;
    for a count, no year, month or percentage (unless a share is asked: `share`)."""
    if qtype == "date" and kind == "number":  # a year, without a unit ("1891", not "1891 Scottish")
        return any(is_year(word.text) for word in words) and all(is_number(word.text) for word in words)
    if qtype == "number" and kind == "number":
        texts = [word.text for word in words]
        dated = any(is_year(t) or t.lower() in MONTHS for t in texts)
        return not dated and (share or not any(t.endswith("%") for t in texts))
    if qtype == "thing" and all(re.fullmatch(r"[\d.,–-]+(s|st|nd|rd|th)?", w.text) for w in words):
        return False  # a bare number or year answers no "what" question that is not typed
    return kind in _FITS[qtype]


def _sandwiched(in_question: Sequence[bool], i: int, j: int) -> bool:
    """Question words right before and right after: the span paraphrases the question's own words."""
    return i > 0 and j < len(in_question) and in_question[i - 1] and in_question[j]


def _nearness(asked: Sequence[int], i: int, j: int, *, subject: bool = False) -> float:
    """How closely the question's words surround the span ``[i, j)``.

    Every question word in the sentence adds ``1 / distance``; one just before the span
    counts double, since a declarative sentence usually names the answer right after the
    words it shares with the question ("... is known as *a guru*"). When the question asks
    for the subject (`subject`: "Who designed ...?"), one just after it counts double instead
    ("*Pittard Sullivan* designed ...").
    """
    total = 0.0
    for k in asked:
        if k < i:
            total += (2.0 if k == i - 1 and not subject else 1.0) / (i - k)
        elif k >= j:
            total += (2.0 if k == j and subject else 1.0) / (k - j + 1)
    return NEAR_BONUS * min(total, 3.0)


def asks_subject(question: str) -> bool:
    """Whether the wh-word is the subject: "Who *designed* ...", "What *has* successfully *dealt*
    with ...", "What German ruler *invited* ..." (not "What did X do", "Who was X")."""
    words = re.findall(r"[\w'-]+", question.lower())
    if not words or words[0] not in ("who", "what", "which"):
        return False
    rest = words[1:]
    if words[0] != "who":  # "What German ruler invited": skip the noun it names
        rest = rest[len(head_nouns(question)) :]
    verb = rest[0] if rest else ""
    if verb in ("has", "have", "had"):
        return True
    if verb in ("is", "are", "was", "were"):  # a passive: "What is *set* up to ...", "Who was *elected*"
        after = [w for w in rest[1:3] if not w.endswith("ly")][:1]
        return bool(after) and (after[0].endswith(("ed", "en")) or after[0] in VERBS)
    return verb not in AUXILIARIES and (verb.endswith(("ed", "s")) or verb in VERBS)


def _lone_opener(words: Sequence[Word], kind: str, i: int, j: int) -> bool:
    """Not a name: a single capitalised word opening the sentence ("However", "Many"), a month
    ("May") or titles only ("Lord", "Major General")."""
    if kind != "name":
        return False
    texts = [w.text for w in words[i:j]]
    opener = i == 0 and j == 1
    return opener or all(t in TITLES for t in texts) or all(t.lower() in MONTHS for t in texts)


def extract_answer(question: str, sentences: Sequence[Sentence], *, limit: int = 5) -> list[Candidate]:
    """The best `limit` candidates over `sentences` (best first); empty when there are none."""
    qtype = question_type(question)
    pool = [c for sentence in sentences for c in candidates(question, sentence, qtype=qtype)]
    best: dict[str, Candidate] = {}
    for candidate in sorted(pool, key=lambda c: -c.score):
        best.setdefault(candidate.text.lower(), candidate)
    return list(best.values())[:limit]


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
