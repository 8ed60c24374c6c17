"""Candidate answer spans of a sentence, each a complete phrase, scored against a question.

1. `candidates` proposes spans: numbers with their unit, dates, capitalised names (with their
   initials and titles, and each name an "and" joins), and noun phrases
   (`ragcli.answer.phrases`), without their article and, from the front, the question's own
   words; spans saying nothing but the question's words are never proposed (the answer is
   what the question does not say).
2. Each is scored (`Candidate.score`): the sentence's relevance; a bonus when its kind fits
   the question's type (`ragcli.answer.questions`; `fits`: a count is no percentage, a date a
   year); a bonus for sitting next to the question's words (before them for a subject
   question, "*X* designed ...", after them otherwise); a bonus when the sentence names it
   ("called", "known as", a copula, quotes), when it is the number of what a how-many
   question counts, and when it ends with the noun a what-question names ("the *twin prime
   conjecture*"); small penalties for question words inside and for words beyond the few an
   answer needs.
3. `extract_answer` returns the best candidates over the given sentences.

The constants were chosen on xquad-en's tune half (qa-tune.jsonl) with
benchmarks/bench_answers.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ragcli.analysis import STOP_WORDS, analyze
from ragcli.answer.phrases import ADVERBS, NUMBER_WORDS, Word, noun_phrases, word_classes, words_of
from ragcli.answer.questions import asks_share, asks_subject, counted_noun, head_words, question_type
from ragcli.answer.sentences import Sentence, question_terms

MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
# Words of a name that are no name on their own.
TITLES = frozenset(
    "Lord Lady Sir Dame King Queen Prince Princess Duke Count Earl Baron Emperor Pope Saint St Mr Mrs Ms "
    "Dr Professor President General Major Colonel Captain Lieutenant Admiral Governor Bishop".split()
)
# The common nouns that end names ("Pacific Ocean", "Schools Act"): no name on their own.
GENERIC_HEADS = frozenset(
    "ocean sea river lake mountain mountains island islands bay valley street road avenue bridge "
    "church cathedral university college school institute museum library hospital act law treaty "
    "protocol party company corporation council court parliament congress area region state city "
    "county province district market station airport park square hall center centre foundation "
    "society association war battle empire kingdom dynasty republic".split()
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


@dataclass(frozen=True)
class Candidate:
    """A span of a sentence proposed as the answer.

    Attributes:
        text: the span, verbatim from the sentence.
        kind: "number", "date", "name" or "phrase" (a noun phrase).
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
        # Only the front is trimmed ("Montreal" is no name where "Montreal Protocol" is one), and
        # never down to a generic head: "the Pacific Ocean" is no "Ocean" (but "River Tyne" is "Tyne").
        k = _trim_front(words, in_question, i, j)
        if k and (k[1] - k[0] > 1 or k[0] == i or words[k[0]].text.lower() not in GENERIC_HEADS):
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
        # names of two words or more on each side: "Tyne and Wear Metro" is one name
        if len(cuts) > 2 and all(b - a > 2 for a, b in zip(cuts[1:], cuts[2:])) and cuts[1] - i > 1:
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
    share = asks_share(question)
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


def _headed(words: Sequence[Word], head: set[str], i: int, j: int) -> bool:
    """The span ends with the question's head noun, or stands right after it (an apposition)."""
    last = set(analyze(words[j - 1].text))
    # "poet *Percy Shelley*", "the colony of *Virginia*"
    k = i - 2 if i > 1 and words[i - 1].text.lower() == "of" else i - 1
    before = set(analyze(words[k].text)) if k >= 0 else set()
    return bool((last | before) & head) and (j - i > 1 or bool(before & head))


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
    return _fits(question_type(question), candidate.kind, words, share=asks_share(question))


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
