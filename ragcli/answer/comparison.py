"""Both sides of a comparison: each thing a question compares, described in the evidence.

A question naming the things it compares ("X vs Y", "the difference between X and Y", "X, Y
and Z: what's the difference?") gets, for each side that no chosen sentence describes yet,
the description under that side's own label line (a man page's option entry, a glossary
term), else the first sentence of the sources that starts with the side's name. The best
sentence alone is often about one side only, or a table row naming them all.
"""

from __future__ import annotations

import re
from typing import Sequence

from ragcli.answer.sentences import Sentence
from ragcli.answer.structure import is_label

_BETWEEN = re.compile(r"\bdifferences?\s+between\s+(?P<sides>.+)$", re.IGNORECASE)
_VERSUS = re.compile(r"\s+(?:vs\.?|versus)\s+", re.IGNORECASE)
# "reset --soft, --mixed and --hard: what's the difference?"
_LISTED = re.compile(
    r"^(?P<sides>.+?)\s*[:,]\s*(?:what(?:'s|’s| is| are)? the differences?|how do they differ)\b",
    re.IGNORECASE,
)
_AND = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", re.IGNORECASE)
_OPTION = re.compile(r"(?<!\S)--?[A-Za-z][\w-]*")


def comparison_sides(question: str) -> list[str]:
    """The names a question compares, in its order; [] when it compares nothing by name."""
    text = question.strip().rstrip("?").strip()
    between, listed = _BETWEEN.search(text), _LISTED.search(text)
    if between:
        parts = _AND.split(between.group("sides"))
    elif listed:
        parts = _AND.split(listed.group("sides"))
    elif _VERSUS.search(text):
        parts = _VERSUS.split(re.split(r"[,:;]", text, maxsplit=1)[0])
    else:
        return []
    sides = [_name(part) for part in parts]
    sides = [side for side in sides if side]
    return _without_shared_first_word(sides) if len(sides) >= 2 else []


def _name(part: str) -> str:
    """A side's name: an option it holds ("reset --soft" -> "--soft"), else its words."""
    part = re.sub(r"^(?:the|an?)\s+", "", part.strip(" '\"`“”‘’."), flags=re.IGNORECASE)
    option = _OPTION.findall(part)
    return option[-1] if option else " ".join(part.split())


def _without_shared_first_word(sides: list[str]) -> list[str]:
    """ "git fetch" and "git pull" are described as "fetch" and "pull" as often as in full."""
    firsts = {side.split()[0].lower() for side in sides if len(side.split()) > 1}
    if len(firsts) == 1 and all(len(side.split()) > 1 for side in sides):
        return [side.split(maxsplit=1)[1] for side in sides]
    return sides


def _key(text: str) -> str:
    """Text compared by name: lower case, "git-revert(1)" as "git revert"."""
    text = re.sub(r"\(\d\)", "", text.lower()).replace("-", " ").strip(" :")
    return " ".join(text.split())


def describes(sentence: Sentence, side: str) -> bool:
    """Whether a sentence starts with the side's name (its label line counts)."""
    key, text = _key(side), _key(sentence.text)
    return text == key or text.startswith(key + " ") or text.startswith(f"git {key} ")


def side_description(side: str, documents: Sequence[Sequence[Sentence]]) -> Sentence | None:
    """The sentence describing `side`: the one under its label line, else the first that
    starts with its name; sources in their order (best first)."""
    key = _key(side)
    for every in documents:
        for at, sentence in enumerate(every[:-1]):
            following = every[at + 1]
            if is_label(sentence.text) and _key(sentence.text) == key and not is_label(following.text):
                return following
    return next(
        (s for every in documents for s in every if not is_label(s.text) and describes(s, side)), None
    )


def missing_sides(question: str, chosen: Sequence[Sentence]) -> list[str]:
    """The sides no chosen sentence describes yet."""
    return [side for side in comparison_sides(question) if not any(describes(s, side) for s in chosen)]
