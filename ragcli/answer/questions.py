"""What a question asks for, read from its form (English): the type of its answer, the noun it
names, what it counts, whether it asks for the subject.

- `question_type`: *number* (how many/much/long/old, what percentage, what was the
  population), *date* (when, what year/century), *person* (who, whom, whose), *place* (where,
  in what city/country), else *thing*; a "what/which <noun>" question is typed by its noun
  (`HEAD_TYPES`: "which Florida *city*" asks for a place). A leading "When/If ..., what ..."
  clause does not decide it.
- `head_nouns`: the noun a what/which question names ("What *court case* ...").
- `counted_noun`: what a how-many question counts ("How many *points* ...").
- `asks_subject`: "Who *designed* ..." asks for the subject, "What did X sing?" for the object.
"""

from __future__ import annotations

import re

from ragcli.analysis import analyze
from ragcli.answer.phrases import AUXILIARIES, VERBS
from ragcli.answer.sentences import FORM_WORDS

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


def counted_noun(question: str) -> str | None:
    """The stem of what a "how many" question counts ("How many *points* did they score?")."""
    match = re.search(r"\bhow many (\w+)", question.lower())
    stems = analyze(match.group(1)) if match else []
    return stems[0] if stems else None


def asks_share(question: str) -> bool:
    return bool(re.search(r"\b(percent|percentage|proportion|share|rate)\b", question.lower()))


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
