"""Both sides of a comparison: each thing a question compares, described in the evidence.

A question naming the things it compares ("X vs Y", "the difference between X and Y", "X, Y
and Z: what's the difference?", "compare X and Y", "how does X compare to Y") gets, for each
side that no chosen sentence describes yet, the description under that side's own label line
(a man page's option entry, a glossary term), else the first sentence of the sources that
starts with the side's name. The best
sentence alone is often about one side only, or a table row naming them all.
"""

from __future__ import annotations

import re
from typing import Sequence

from ragcli.answer.sentences import Sentence
from ragcli.answer.structure import is_label

_BETWEEN = re.compile(r"\bdifferences?\s+between\s+(?P<sides>.+)$", re.IGNORECASE)
# "vs" in capitals is a name ("VS Code"), not the word between two sides.
_VERSUS = re.compile(r"\s+(?:[Vv]s\.?|(?i:versus))\s+")
# "reset --soft, --mixed and --hard: what's the difference?"
_LISTED = re.compile(
    r"^(?P<sides>.+?)\s*[:,]\s*(?:what(?:'s|’s| is| are)? the differences?|how do they differ)\b",
    re.IGNORECASE,
)
# "compare X and Y", "compare X with Y", "how does X compare to Y", "X compared with Y": the same
# question as "X vs Y" in other words.
_COMPARE = re.compile(r"^(?:(?:can|could|would) you\s+|please\s+)?compare\s+(?P<sides>.+)$", re.IGNORECASE)
_COMPARED = re.compile(
    r"^(?:how (?:does|do|did|is|are|would)\s+)?(?P<first>.+?)"
    r"\s+compare[sd]?\s+(?:to|with|against)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_WITH = re.compile(r"\s+(?:with|to|against|versus|vs\.?)\s+", re.IGNORECASE)
_AND = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", re.IGNORECASE)
_OPTION = re.compile(r"(?<!\S)--?[A-Za-z][\w-]*")
# What ends the sides of "X vs Y": a comma, colon or semicolon, or a dash between spaces.
_CLAUSE_END = re.compile(r"[,:;]|\s[-\u2013\u2014]+\s")


def comparison_sides(question: str) -> list[str]:
    """The names a question compares, in its order (their shortest form); [] when it compares
    nothing by name."""
    return [names[-1] for names in side_names(question)]


def side_names(question: str) -> list[tuple[str, ...]]:
    """Each side's names: as written, then without the first word all sides share ("git
    fetch", "fetch"), since a document describes them either way."""
    text = question.strip().rstrip("?").strip()
    parts = _compared_parts(text)
    if not parts:
        return []
    sides = [side for side in map(_name, parts) if side]
    return _with_shorter_names(sides) if len(sides) >= 2 else []


def search_text(question: str) -> str:
    """What to search for to answer a comparison: the question without the "vs" between its
    sides. The word says how the question is put, not what it is about, and it matches pages
    titled "A vs B" on other things (for "cargo check vs cargo build", the page comparing two
    files rather than the command's own page). Any other question unchanged."""
    if not side_names(question):
        return question
    return " ".join(_VERSUS.sub(" ", question).split())


def _compared_parts(text: str) -> list[str]:
    """The parts of a question that name the things it compares, before they are cleaned."""
    between, listed, compare = _BETWEEN.search(text), _LISTED.search(text), _COMPARE.search(text)
    if between or listed:  # "X vs Y, what's the difference?" lists its sides with "vs"
        return [
            side for part in _AND.split((between or listed).group("sides")) for side in _VERSUS.split(part)
        ]
    if _VERSUS.search(text):  # the question's own clause after the sides: "X vs Y - which is faster"
        return _VERSUS.split(_CLAUSE_END.split(text, maxsplit=1)[0])
    if compare:
        return _AND.split(_WITH.sub(" and ", compare.group("sides"), count=1))
    compared = _COMPARED.search(text)
    if compared:
        return [compared.group("first"), *_AND.split(compared.group("rest"))]
    return []


def _name(part: str) -> str:
    """A side's name: an option it holds ("reset --soft" -> "--soft"), else its words."""
    part = re.sub(r"^(?:the|an?)\s+", "", part.strip(" '\"`“”‘’."), flags=re.IGNORECASE)
    option = _OPTION.findall(part)
    return option[-1] if option else " ".join(part.split())


def _with_shorter_names(sides: list[str]) -> list[tuple[str, ...]]:
    """Every side, with its name less the first word when all sides share that word."""
    words = [side.split() for side in sides]
    if all(len(w) > 1 for w in words) and len({w[0].lower() for w in words}) == 1:
        return [(side, " ".join(w[1:])) for side, w in zip(sides, words)]
    return [(side,) for side in sides]


def _key(text: str) -> str:
    """Text compared by name: lower case, "git-revert(1)" as "git revert"."""
    text = re.sub(r"\(\d\)", "", text.lower()).replace("-", " ").strip(" :")
    return " ".join(text.split())


def describes(sentence: Sentence, names: Sequence[str]) -> bool:
    """Whether a sentence starts with one of a side's names (its label line counts)."""
    text = _key(sentence.text)
    return any(text == key or text.startswith(key + " ") for key in map(_key, names))


def side_description(names: Sequence[str], documents: Sequence[Sequence[Sentence]]) -> Sentence | None:
    """The sentence describing a side: the one under its label line, else the first that
    starts with one of its names; sources in their order (best first)."""
    keys = {_key(name) for name in names}
    for every in documents:
        for at, sentence in enumerate(every[:-1]):
            following = every[at + 1]
            if is_label(sentence.text) and _key(sentence.text) in keys and not is_label(following.text):
                return following
    return next(
        (s for every in documents for s in every if not is_label(s.text) and describes(s, names)), None
    )


def missing_sides(question: str, chosen: Sequence[Sentence]) -> list[tuple[str, ...]]:
    """The sides (their names) no chosen sentence describes yet."""
    return [names for names in side_names(question) if not any(describes(s, names) for s in chosen)]
