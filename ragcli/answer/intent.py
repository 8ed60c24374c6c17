"""What kind of answer a question asks for, read from its form (English): a procedure ("how do
I ..."), a reason ("why ..."), several things ("which hooks ...", "list ..."); and whether a
sentence states a reason. The evidence step picks what to quote by these, a capable model's
short line is checked by them.
"""

from __future__ import annotations

import re

_HOW_TO = re.compile(
    r"\bhow (?:do|can|should|would|could|will) (?:i|you|we|one)\b|\bhow to\b|\bsteps? (?:to|for)\b",
    re.IGNORECASE,
)
_WHY = re.compile(r"\b(?:why|how come)\b", re.IGNORECASE)
# How documentation states a reason: a cause ("because", "due to", "since"), a purpose ("so that",
# "in order to", "the purpose of ... is", "to ensure", "to avoid"), or a consequence ("this
# means", "as a result", "a consequence of this is"). A reference page says why a tool does
# something by what it is for ("Cargo uses the lockfile to provide deterministic builds ..., by
# ensuring that ...") more often than with "because". "since" counts only after a comma and not
# before a version ("since 2.0" dates a change), "otherwise" only after a comma ("..., otherwise
# the data is lost"; "Otherwise, if ..." opens the other case of a condition, and "unless
# otherwise noted" states no reason).
_REASON = re.compile(
    r"\b(?:because|reasons?|due to|caused by|so that|so as to|in order to|as a result|this is why"
    r"|that is why|purposes?|intended (?:to|for)|ensur(?:e|es|ing)|to avoid|to prevent|consequences?"
    r"|consequently|therefore|hence|(?:this|which|that) means)\b"
    r"|,\s*since\s+(?!v?\d)|[,;]\s*otherwise\b",
    re.IGNORECASE,
)


def asks(text: str) -> bool:
    """Whether a line asks a question (it ends with a question mark)."""
    return text.rstrip().endswith(("?", "？"))


def asks_for_several(question: str) -> bool:
    """Whether the question asks for several things (a list question, English): "which/what"
    followed by a plural noun ("which hooks", "what merge strategies"), or "list", "what are the"."""
    lowered = question.lower()
    if _LIST_REQUEST.search(lowered):
        return True
    match = re.search(r"\b(?:which|what)\b((?:\s+[\w-]+){1,3})", lowered)
    return bool(match) and any(_is_plural(word) for word in match.group(1).split())


_LIST_REQUEST = re.compile(r"\b(?:list|enumerate|what are the|name (?:all|the))\b")


def _is_plural(word: str) -> bool:
    """An English plural noun, roughly: longer than three letters, ending in a lone "s"."""
    return len(word) > 3 and word.endswith("s") and not word.endswith(_NOT_PLURAL)


_NOT_PLURAL = ("ss", "us", "is", "ous", "does", "was", "has", "gets", "goes")


def asks_how_to(question: str) -> bool:
    """Whether a question asks for a procedure ("how do I ...", "how to ...", English)."""
    return bool(_HOW_TO.search(question))


def asks_why(question: str) -> bool:
    """Whether a question asks for a reason ("why ...", "how come ...", English)."""
    return bool(_WHY.search(question))


def gives_reason(text: str) -> bool:
    """Whether a sentence states a reason (a causal cue word: "because", "the reason is")."""
    return bool(_REASON.search(text))
