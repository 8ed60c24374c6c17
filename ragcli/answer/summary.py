"""Questions about a whole document ("summarize X", "what is X about"), answered from it.

When a question asks what a document says as a whole (`asks_about_document`), retrieving the
few chunks most like the question's words misses the point: the answer covers the document
the question names, which is the top hit's document (its file name or title matches the
question best, or ``--doc`` chose it). A question that gives a file name ("bread.md", "the
giteveryday page") is kept to the indexed file of that name, whatever it asks. Without a
capable model the answer is an extractive summary (`extractive_summary`): the document's
title and headings, then its most central sentences (its opening sentences, then those
nearest, by embedding, to the mean of all its sentences), quoted in document order within
the evidence budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ragcli.answer.context import Source
from ragcli.answer.completion import Selection, is_list_item, is_title, list_of
from ragcli.answer.evidence import quote
from ragcli.answer.sentences import Sentence, sentences_of
from ragcli.answer.structure import is_label
from ragcli.analysis import cjk_characters
from ragcli.embedding.base import Embedder

# The forms of a question about a document as a whole (English).
_ABOUT_DOCUMENT = re.compile(
    r"\b(?:summari[sz]\w*|summary|overview|gist|tl;?dr|main (?:idea|point|topic)s?)\b|"
    # Only as the question's last word: "what does git describe print?" and "what is known about
    # X?" ask about X, not about a document.
    r"\bwhat(?:'s| is| are)\b.{1,80}\babout\W*$|\bwhat does\b.{1,80}\b(?:cover|say|describe)\W*$",
    re.IGNORECASE,
)
# Characters of the section headings shown after the title (the page's table of contents).
HEADING_CHARS = 300
# A document's opening sentences say what it is about more often than any other: they come
# first, the most central sentences fill the rest of the budget.
LEAD_SENTENCES = 2
# Centrality is judged among at most this many of a document's sentences, evenly spaced: a
# 2,000-sentence manual took 15 s to embed on two CPU cores for a 1,000-character summary.
CENTRAL_AT_MOST = 400


def _is_worded(title: str) -> bool:
    """A heading made of words, not a drawing or a code line ("---o---M---W", "$ make")."""
    letters = sum(c.isalpha() for c in title)
    return letters >= 0.7 * len(title.replace(" ", "")) and not set(title) & set("$<>{}=;/\\#@*|")


# The words of a request for a summary, not of its subject (English).
_REQUEST_WORDS = re.compile(
    r"\b(summari[sz]\w*|summary|overview|gist|tl;?dr|main (?:idea|point|topic)s?|give|tell|show|me|"
    r"can|could|would|you|please|what(?:'s)?|is|are|does|do|about|covers?|says?|describes?|of|an?)\b",
    re.IGNORECASE,
)


def document_subject(question: str) -> str:
    """What to search for to find the document a summary question names: the question without
    the words asking for a summary ("give me a summary of what the X manual covers" -> "the X
    manual"), so they do not pull in pages that merely contain the word "summary"; any other
    question unchanged."""
    if not asks_about_document(question):
        return question
    subject = " ".join(_REQUEST_WORDS.sub(" ", question).replace("?", " ").split())
    return subject or question


def asks_about_document(question: str) -> bool:
    """Whether the question asks what a document says as a whole ("summarize X", "what does the
    X page cover", "what is the X guide for")."""
    if _ABOUT_DOCUMENT.search(question):
        return True
    return bool(_PURPOSE.search(question) and _DOCUMENT_NOUN.search(question))


# What a user calls one document when naming it (English, singular: "the git docs" are all of
# them, "the git doc" is one).
_DOCUMENT_NOUN = re.compile(
    r"\b(?:document|doc|page|file|manual|guide|howto|how-to|article|chapter|paper|handbook|tutorial)\b",
    re.IGNORECASE,
)
# "what is the X page for", "the purpose of the X guide".
_PURPOSE = re.compile(r"\bwhat(?:'s| is| are)\b.{1,80}\bfor\b\W*$|\b(?:purpose|point) of\b", re.IGNORECASE)
_FILE_NAME = re.compile(r"(?<![\w.-])[A-Za-z][\w-]*\.[A-Za-z][A-Za-z0-9]{0,4}(?!\.?[\w/-])")
# A name-like word right before a document noun, past a kind of page ("the git-log man page").
_NAMED_BY_NOUN = re.compile(
    r"(?<![\w./-])([A-Za-z][\w.-]*[A-Za-z0-9])\s+(?:(?:man|help|web|wiki|info)\s+)?" + _DOCUMENT_NOUN.pattern,
    re.IGNORECASE,
)
# A name-like word right after a document noun and "for", "of", "on" or "about" ("the man page
# for xz", "the guide to tar"): the words before it name the kind of page, not which one.
_NAMED_AFTER_NOUN = re.compile(
    r"(?:man\s+|help\s+)?" + _DOCUMENT_NOUN.pattern + r"\s+(?:for|of|on|about|to)\s+(?:the\s+)?"
    r"([A-Za-z][\w.-]*[A-Za-z0-9])(?![\w./-])",
    re.IGNORECASE,
)
# Words before a document noun that are not its name ("the main page", "that file").
_NOT_NAMES = frozenset(
    "a an the this that these those my our your their its which what whole main man help web home "
    "first last next previous same other each every one another".split()
)


def named_documents(question: str) -> list[str]:
    """File names the question may give a document by, most explicit first: a word with a file
    extension ("bread.md"), then a name-like word right before a document noun ("the giteveryday
    document") or right after it ("the man page for xz"). Each is a guess: only an indexed file
    of that name makes it one."""
    names = [match.group(0) for match in _FILE_NAME.finditer(question)]
    by_noun = [
        match
        for match in _NAMED_BY_NOUN.finditer(question)
        if not _ends_a_longer_name(question[: match.start(1)])
    ]
    for match in [*by_noun, *_NAMED_AFTER_NOUN.finditer(question)]:
        word = match.group(1)
        if word.lower() not in _NOT_NAMES and not _DOCUMENT_NOUN.fullmatch(word):
            names.append(word)
    return list(dict.fromkeys(names))


_LAST_WORD = re.compile(r"([\w'’-]+)[ \t]+$")


def _ends_a_longer_name(before: str) -> bool:
    """Whether the word right before a document noun is the last of several naming it ("the
    functional programming howto", "the socket programming guide"): a page's title of many
    words, not its file name, which is one word. Taken for a file name, its last word keeps the
    answer to another page that happens to be called so ("programming.html"). A word such as
    "the", "this" or "summarize" before the name is not part of it."""
    previous = _LAST_WORD.search(before)
    if previous is None:
        return False
    word = previous.group(1)
    return word.lower() not in _NOT_NAMES and not _REQUEST_WORDS.fullmatch(word)


def file_name_globs(name: str) -> tuple[str, ...]:
    """`path` filter globs for a file called `name` (or `name` plus any extension), in any folder,
    matching letters in either case."""
    import glob

    either = "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else glob.escape(c) for c in name)
    extension = "" if _FILE_NAME.fullmatch(name) else ".*"
    return (either + extension, "*/" + either + extension)


def _is_sentence(text: str) -> bool:
    """Enough words to say something (not a label like "default: off"): four words, or eight
    characters of a script written without spaces (Chinese, Japanese)."""
    return len(text.split()) >= 4 or cjk_characters(text) >= 8


def evenly(items: Sequence[Sentence], most: int) -> list[Sentence]:
    """At most `most` of the items, evenly spaced through them, in order (all when fewer)."""
    if len(items) <= most:
        return list(items)
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]


def central_sentences(sentences: Sequence[Sentence], embedder: Embedder | None) -> list[Sentence]:
    """The sentences, most central first: cosine with the mean of all of them (with an embedder),
    else document order."""
    if embedder is None or len(sentences) < 2:
        return list(sentences)
    vectors = np.asarray(embedder.embed([s.text for s in sentences]))
    centre = vectors.mean(axis=0)
    centre /= np.linalg.norm(centre) or 1.0
    scores = vectors @ centre
    return [sentences[i] for i in np.argsort(-scores, kind="stable")]


def outline(sentences: Sequence[Sentence]) -> tuple[str | None, list[str]]:
    """The document's title (its first line when that is a heading) and its worded headings."""
    titles = [" ".join(s.text.lstrip("#").split()) for s in sentences if is_title(s.text)]
    first = " ".join(sentences[0].text.lstrip("#").split()) if sentences else ""
    title = first if first and is_label(first) else (titles[0] if titles else None)
    headings, used = [], 0
    for heading in dict.fromkeys(t for t in titles if t != title and _is_worded(t)):
        used += len(heading) + 2
        if used > HEADING_CHARS:
            break
        headings.append(heading)
    return title, headings


@dataclass(frozen=True)
class SummaryCandidates:
    """What an extractive summary of one document chooses from, worked out once per document
    (a capable model's summary cuts the same document again within a larger budget).

    Attributes:
        heading: the title and headings line, cited; None without a title.
        ranked: the candidate sentences, the lead first, then the most central.
    """

    heading: str | None
    ranked: tuple[Sentence, ...]


def summary_candidates(source: Source, embedder: Embedder | None) -> SummaryCandidates:
    """The title and headings line, and the lead and central sentences of one whole-document source."""
    sentences = sentences_of([source.text])
    title, headings = outline(sentences)
    body = [s for s in sentences if not is_title(s.text) and not s.text.lstrip().startswith("|")]
    body = [s for s in body if _is_sentence(s.text) and " ".join(s.text.lstrip("#").split()) != title]
    heading = None
    if title:
        heading = title + (f" (sections: {'; '.join(headings)})" if headings else "") + f" [{source.number}]"
    lead = body[:LEAD_SENTENCES]
    central = central_sentences(evenly(body, CENTRAL_AT_MOST), embedder)
    return SummaryCandidates(heading, tuple(lead + [s for s in central if s not in lead]))


def extractive_summary(
    source: Source,
    embedder: Embedder | None,
    budget: int,
    candidates: SummaryCandidates | None = None,
) -> tuple[str, list[Sentence]]:
    """A summary of one whole-document source: title and headings line, lead and central sentences
    within `budget` characters, in document order (`candidates`: from `summary_candidates`).

    A list is quoted whole or not at all: a central list item brings its whole list when it all
    fits, else it is left out (a summary quoting steps 1-4 of 5, or two of four ingredients, cut
    the list without saying so). A document that is one list longer than the budget gets its
    first items and a line saying the list continues."""
    candidates = candidates or summary_candidates(source, embedder)
    every = sentences_of([source.text])
    chosen = Selection(budget)
    for sentence in candidates.ranked:
        if chosen.has(sentence):
            continue
        if not is_list_item(sentence.text):
            chosen.add(sentence)
            continue
        missing = [s for s in list_of(sentence, every) if not chosen.has(s)] or [sentence]
        if sum(len(s.text) + 6 for s in missing) <= chosen.left:
            for item in missing:
                chosen.add(item)
    if not chosen.chosen and candidates.ranked:  # a document that is one list over the budget
        first = candidates.ranked[0]
        chosen.add_list(list_of(first, every) or [first], first.passage)
    in_order = sorted(chosen.chosen, key=lambda s: s.start)
    lines = ([candidates.heading] if candidates.heading else []) + [quote(sentence) for sentence in in_order]
    if chosen.cut:
        lines.append(f"(the list continues in [{source.number}])")
    return "\n".join(lines), in_order
