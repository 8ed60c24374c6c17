"""Noun phrases of an English sentence, found by rules: the spans a "what/which" question can ask for.

No tagger is shipped (a statistical one would need a model file and a heavier import), so a
word's class comes from closed word lists, its form and its neighbours:

1. `word_classes`: determiners, prepositions, conjunctions, pronouns and auxiliaries are closed
   lists; digits and number words are numbers; lower-case ``-ly`` words are adverbs. A past
   participle or ``-ing`` form is a *modifier* inside a phrase after a determiner, a number or
   a preposition and before a noun ("the first *recorded* settlement", "led to *increased*
   settlement"), and a verb otherwise ("Twigg *suggested* that ..."); so is a known verb. A
   lower-case ``-s`` word followed by a determiner is a verb ("the prosecution *proposes* a
   plea bargain"), and so is a bare lower-case word after "to" or a modal ("to *settle*").
   Every other word is a noun or an adjective (`OPEN`).
2. `noun_phrases`: maximal runs of determiners, numbers and open words, not crossing
   punctuation (a comma, a bracket, a quote or a dash ends a phrase), that hold a noun; each is
   offered alone and, when followed by "of" + phrase or "and" + phrase, joined with it too
   ("a form *of anthrax*", "settlement *and deforestation*").

Every span returned starts and ends with a whole word and never with a function word, so it
is a complete phrase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand "
    "million billion trillion dozen half first second third fourth fifth sixth seventh eighth ninth tenth "
    "several".split()
)
DETERMINERS = frozenset(
    "a an the this these those its his her their our your my some any each every no another many "
    "several most all both few much more less least fewer either neither such".split()
)
PREPOSITIONS = frozenset(
    "of in on at to for from by with as into onto upon about over under between through during after "
    "before against among within without across along around behind beyond near toward towards via per "
    "since until than like unlike despite except throughout including".split()
)
CONJUNCTIONS = frozenset("and or but nor yet".split())
PRONOUNS = frozenset(
    "it they he she we i you them him us me who whom whose which that what where when while whereas "
    "because although though if whether there itself themselves himself herself one ones something "
    "nothing anything everything someone anyone everyone how why so".split()
)
AUXILIARIES = frozenset(
    "is are was were be been being am has have had do does did can could will would shall should may "
    "might must 's".split()
)
ADVERBS = frozenset(
    "not also only very just often usually generally now then still even already however thus "
    "therefore perhaps later soon never always again too almost rather quite once instead else "
    "nevertheless meanwhile hence up down out off away back here sometimes today recently twice "
    "somewhere anywhere everywhere elsewhere nowhere".split()
)
# -ly words that are nouns or adjectives, not adverbs.
LY_WORDS = frozenset(
    "family italy july assembly supply ally rally reply monopoly anomaly butterfly holy early daily "
    "weekly monthly yearly friendly elderly costly lovely likely unlikely only fly belly jelly lily "
    "emily sicily bully".split()
)
# Frequent verbs whose form does not give them away (irregular pasts, participles, base forms).
VERBS = frozenset(
    "began become became led made make makes took take takes gave give gives won win wins held hold "
    "holds found find finds thought think brought bring built build sent send wrote write writes said "
    "say says came come comes went go goes saw see sees knew know knows grew grow grows rose fell drove "
    "paid pay met left lost kept keep told tell stood ran run sang spoke broke chose written taken given "
    "known chosen driven shown grown drawn fallen broken spoken stolen hidden done seen gone begun "
    "sought fought taught caught bought got get gets felt meant lay laid put set let became include "
    "includes provide provides use uses remain remains consider considers believe believes allow "
    "allows require requires contain contains describe describes refer refers lead leads help helps "
    "cause causes called named termed meet meets".split()
)
# Determiners that open a verb's object (not quantifiers: "members *all* agreed").
OBJECT_DETERMINERS = frozenset("a an the this these those its his her their our your my".split())
RELATIVES = frozenset("that which who".split())
# A bare lower-case word after these is a verb ("to *settle* in his realms", "could *buy*").
INFINITIVE_MARKERS = frozenset("to can could will would shall should may might must".split())
# -ing words that are nouns.
ING_NOUNS = frozenset(
    "building buildings meeting meetings king kings thing things spring springs wing wings ring rings "
    "evening morning ceiling painting paintings setting settings training funding housing spending "
    "beginning ending during nothing something anything everything string strings being beings "
    "clothing feeling feelings offering offerings wedding warning warnings reading readings".split()
)
_BREAKS = re.compile(r"[^\s'’]")
_WORD = re.compile(r"[\w$£€%][\w$£€%.,'’-]*[\w%]|[\w$£€%]")
# The classes a phrase is made of.
OPEN, NUMBER, DETERMINER, MODIFIER = "open", "number", "det", "mod"
_IN_PHRASE = frozenset((OPEN, NUMBER, MODIFIER))


@dataclass(frozen=True)
class Word:
    text: str
    start: int
    end: int


def words_of(text: str) -> list[Word]:
    """The words of `text` with their character offsets (edge punctuation dropped)."""
    return [Word(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def is_number_word(word: str) -> bool:
    """Digits, or a number word ("five", "million")."""
    return any(ch.isdigit() for ch in word) or word.lower() in NUMBER_WORDS


def breaks(text: str, words: Sequence[Word]) -> list[bool]:
    """``breaks[k]``: punctuation stands between word k-1 and word k (True for k = 0)."""
    return [
        k == 0 or bool(_BREAKS.search(text[words[k - 1].end : words[k].start])) for k in range(len(words))
    ]


def _closed_class(word: str) -> str | None:
    lowered = word.lower()
    for name, members in (
        ("det", DETERMINERS),
        ("prep", PREPOSITIONS),
        ("conj", CONJUNCTIONS),
        ("pron", PRONOUNS),
        ("aux", AUXILIARIES),
        ("adv", ADVERBS),
    ):
        if lowered in members:
            return name
    if is_number_word(word):
        return NUMBER
    if word.islower() and lowered.endswith("ly") and len(lowered) > 4 and lowered not in LY_WORDS:
        return "adv"
    return None


def _verb_like(word: str) -> bool:
    lowered = word.lower()
    if not word.islower() or lowered in ING_NOUNS or "-" in word:  # "performance-related"
        return False
    return lowered in VERBS or (len(lowered) > 4 and lowered.endswith(("ed", "ing")))


def _takes_object(word: str, rest: Sequence[Word]) -> bool:
    """A word between a noun and a determiner or number is a verb: "X *proposes* a ...",
    "X *measure* the ...", "the Act *recognises* two ..." (nouns rarely meet a determiner)."""
    after = rest[0].text.lower() if rest else ""
    return after in OBJECT_DETERMINERS or (word.endswith("s") and is_number_word(after))


def word_classes(words: Sequence[Word], text: str | None = None) -> list[str]:
    """One class per word: det, prep, conj, pron, aux, adv, number, verb, mod (a participle
    inside a phrase) or open (a noun or adjective); see the module docstring. With the `text`
    the words come from, punctuation between two words is seen ("problems, a problem")."""
    # The first word is capitalised for being first: class it as if it were not.
    classes = [_closed_class(w.text if k else w.text.lower()) or OPEN for k, w in enumerate(words)]
    cut = breaks(text, words) + [True] if text is not None else [False] * len(words) + [True]
    for k, word in enumerate(words):
        if classes[k] != OPEN:
            continue
        following = classes[k + 1] if k + 1 < len(words) and not cut[k + 1] else None
        before = classes[k - 1] if k else None
        if _verb_like(word.text):
            noun_next = following in (OPEN, NUMBER)
            if before == "det":  # "the recorded settlement", "the cause", "the beginning"
                classes[k] = MODIFIER if noun_next else OPEN
            else:
                modifies = noun_next and before in (None, NUMBER, "prep", MODIFIER)
                classes[k] = MODIFIER if modifies else "verb"
        elif following == "prep" and words[k + 1].text.lower() == "than":
            classes[k] = "adv"  # "greater than 1": a comparison, not a noun
        elif (
            word.text.islower()
            and (before in (OPEN, NUMBER) or (before == "conj" and k > 1 and classes[k - 2] == OPEN))
            and not cut[k + 1]
            and _takes_object(word.text, words[k + 1 :])
        ):
            # "the prosecution *proposes* a plea bargain", "they *measure* the ratio", "groups and *offer* a"
            classes[k] = "verb"
        elif (
            word.text.islower()
            and k
            and words[k - 1].text.lower() in RELATIVES
            and following in ("prep", "det")
        ):
            classes[k] = "verb"  # "a science that *focuses* on"
        elif word.text.islower() and k and words[k - 1].text.lower() in INFINITIVE_MARKERS:
            classes[k] = "verb"  # "to settle", "could buy"
        elif before == "aux" and word.text.islower() and not word.text.endswith("s") and following != OPEN:
            classes[k] = "verb"  # a predicate: "is incumbent upon", "can be recast as"
    return classes


def _base_phrases(classes: Sequence[str], cut: Sequence[bool]) -> list[tuple[int, int]]:
    """Maximal ``[i, j)`` runs: determiners first, then open words, numbers and modifiers."""
    found, k = [], 0
    while k < len(classes):
        i = k
        while k < len(classes) and classes[k] == "det" and (k == i or not cut[k]):
            k += 1
        start = k
        while k < len(classes) and classes[k] in _IN_PHRASE and (k == i or not cut[k]):
            k += 1
        # A phrase needs a noun: it may not end on a modifier ("the *affected*").
        end = k
        while end > start and classes[end - 1] == MODIFIER:
            end -= 1
        if end > start:
            found.append((i, end))
        k = max(k, i + 1)
    return found


def noun_phrases(text: str, words: Sequence[Word] | None = None) -> list[tuple[int, int]]:
    """Word ranges ``[i, j)`` of the noun phrases of `text`, alone and joined by "of"/"and"."""
    words = words_of(text) if words is None else words
    classes = word_classes(words, text)
    cut = breaks(text, words)
    base = _base_phrases(classes, cut)
    result = list(base)
    starts = {i: j for i, j in base}
    for i, j in base:
        end = j
        for _ in range(2):
            link = words[end].text.lower() if end < len(words) else ""
            if link not in ("of", "and") or cut[end] or end + 1 not in starts or cut[end + 1]:
                break
            end = starts[end + 1]
            result.append((i, end))
    return sorted(set(result))
