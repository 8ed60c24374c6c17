"""Questions about something the documents never mention.

A question naming a product, a tool or a person ("How do I set up Acme Cloud?") that no
indexed document mentions cannot be answered from them, however well its other words match:
the retrieved passages are about something else, and quoting them misleads. A name is a word
written with a capital letter that does not start the question or a sentence of it ("I"
aside), with the capitalised words right after it; an environment variable ("$HOME") is none.
Names found in the retrieved passages are known; any other is looked up in the whole index with
a keyword search (BM25), and a name no document holds makes the answer abstain.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Sequence

from ragcli.analysis import analyze
from ragcli.retrieval.search import QueryOptions
from ragcli.types import Hit

# A word, kept whole across "&" ("V&A"); a single letter is no name.
_WORD = re.compile(r"[^\W\d_][\w'’&-]*")
_SENTENCE_END = (".", "?", "!", ":")
# A word right after one of these is an environment variable ("$HOME", "${PATH}", "%APPDATA%"),
# the user's own setting, not a thing the documents must name.
_VARIABLE_SIGILS = ("$", "{", "%")


def question_names(question: str) -> list[str]:
    """The names of the question: runs of capitalised words (one space apart) that start
    neither the question nor one of its sentences ("Lady Gaga", "Acme Cloud")."""
    names: list[list[str]] = []
    last_end = -2
    for match in _WORD.finditer(question):
        word = re.sub(r"['’]s$", "", match.group()).strip("'’-")
        before = question[: match.start()].rstrip()
        if not before or before.endswith(_SENTENCE_END) or not word[:1].isupper() or len(word) < 2:
            continue
        if question[match.start() - 1 : match.start()] in _VARIABLE_SIGILS:  # $HOME, %APPDATA%
            continue
        if names and question[last_end : match.start()] == " ":
            names[-1].append(word)
        else:
            names.append([word])
        last_end = match.end()
    return list(dict.fromkeys(" ".join(words) for words in names))


def spelled_out(name: str, texts: Sequence[str]) -> bool:
    """Whether `name` is an acronym ("UN", "V&A", "NFL") whose words, capitalised, stand in one
    of the texts ("United Nations", "Victoria and Albert", "National Football League"): the
    initials in order, small joining words between them allowed (Schwartz and Hearst's
    abbreviation-definition match, simplified)."""
    letters = [char for char in name if char.isalpha()]
    if not 2 <= len(letters) <= 6 or not name.replace("&", "").isupper() or " " in name:
        return False
    joint = r"[\w'’]*(?:[\s-]+(?:of|and|the|for|de|du|la|&)){0,2}[\s-]+"
    pattern = re.compile(r"\b" + joint.join(re.escape(letter) for letter in letters) + r"[\w'’]*")
    return any(pattern.search(text) for text in texts)


def unknown_names(
    question: str,
    hits: Sequence[Hit],
    search: Callable[[str, QueryOptions], list[Hit]],
    options: QueryOptions,
) -> list[str]:
    """The question's names that no indexed document holds (see the module docstring).

    A name is known when one of its words, as the index analyses it ("Grammys" and "Grammy"
    alike), is in the retrieved hits or in the best keyword hit for it.

    Args:
        question: the question.
        hits: the retrieved hits (names found in them are known without a search).
        search: the index's search.
        options: the question's retrieval options (group, filters, ``--doc``) to search within.
    """
    texts = [hit.chunk.text for hit in hits]
    seen = {term for text in texts for term in analyze(text)}
    lookup = replace(options, mode="bm25", top_k=1, rerank=None, require=(), exclude=(), min_score=None)
    missing = []
    for name in question_names(question):
        terms = set(analyze(name))
        if terms & seen or spelled_out(name, texts):
            continue
        found = search(name, lookup)
        if not terms & {term for hit in found for term in analyze(hit.chunk.text)}:
            missing.append(name)
    return missing
