"""Questions about something the documents never mention.

A question naming a product, a tool or a person ("How do I set up Acme Cloud?") that no
indexed document mentions cannot be answered from them, however well its other words match:
the retrieved passages are about something else, and quoting them misleads. A name is a word
written with a capital letter that does not start the question or a sentence of it ("I"
aside), with the capitalised words right after it; an environment variable ("$HOME") is none.
Names found in the retrieved passages are known; any other is looked up in the whole index with
a keyword search (BM25), and a name no document holds makes the answer abstain.

Users write the names of tools in lower case too ("configure webpack", "upload it to pypi"). A
word the embedding model's vocabulary does not hold whole (its tokenizer cuts it into pieces:
"web ##pack", "ng ##in ##x") is a coined word, a name or a term of art, not one of the common
words of English the vocabulary was built from ("slowly", "everyone", "developing"). A common
word the documents lack is usually the asker's wording of something they say in other words;
a coined word they lack is a thing they never name, and is treated as a name
(`coined_words`). A coined word one or two typing slips away from a word of the retrieved
passages is that word misspelt ("cynaobacteria"), and is known (`misspells`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Sequence

from ragcli.analysis import analyze
from ragcli.answer.sentences import FORM_WORDS
from ragcli.answer.summary import document_subject, named_documents
from ragcli.embedding.base import Embedder
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


def coined_words(question: str, pieces: Callable[[str], int]) -> list[str]:
    """The question's words written in lower case that `pieces` (the embedding model's tokenizer:
    how many tokens it cuts a word into) cuts into two or more, and that are more than the words
    of a question's form ("how", "what"), of a request for a summary ("summarize") or the file
    name of a document ("the gitsubmodules manual"): the pages say these under their own names."""
    subject = document_subject(question)
    documents = {word.lower() for name in named_documents(question) for word in _WORD.findall(name)}
    coined = []
    for match in _WORD.finditer(subject):
        word = re.sub(r"['’]s$", "", match.group()).strip("'’-")
        variable = subject[match.start() - 1 : match.start()] in _VARIABLE_SIGILS
        if not word.islower() or word in documents or variable:
            continue
        if set(analyze(word)) - FORM_WORDS and pieces(word) > 1:
            coined.append(word)
    return list(dict.fromkeys(coined))


def word_pieces(embedder: Embedder) -> Callable[[str], int]:
    """How many tokens the embedding model cuts a word into (see `coined_words`)."""
    return lambda word: len(embedder.token_offsets(word))


def misspells(word: str, words: set[str]) -> bool:
    """Whether `word` is one of `words` mistyped: the same first letter, one edit away (two from
    six letters on; an edit inserts, drops, replaces or swaps two letters). A word of under four
    letters is never taken for a slip: too many words lie one edit from it ("deb", "dep").
    These are the defaults of Lucene's spell checker (min prefix 1, min query length 4) and of
    Elasticsearch's fuzzy matching ("AUTO": one edit from 3 letters, two from 6)."""
    if len(word) < 4:
        return False
    from rapidfuzz.distance import OSA  # optimal string alignment: Levenshtein with swaps

    edits = 1 if len(word) < 6 else 2
    return any(
        other[:1] == word[:1]
        and abs(len(other) - len(word)) <= edits
        and OSA.distance(word, other, score_cutoff=edits) <= edits
        for other in words
    )


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
    pieces: Callable[[str], int] | None = None,
) -> list[str]:
    """The question's names that no indexed document holds (see the module docstring).

    A name is known when one of its words, as the index analyses it ("Grammys" and "Grammy"
    alike), is in the retrieved hits or in the best keyword hit for it.

    Args:
        question: the question.
        hits: the retrieved hits (names found in them are known without a search).
        search: the index's search.
        options: the question's retrieval options (group, filters, ``--doc``) to search within.
        pieces: how many tokens the embedding model cuts a word into; None reads no coined
            word as a name (a keyword-only question loads no model).
    """
    texts = [hit.chunk.text for hit in hits]
    seen = {term for text in texts for term in analyze(text)}
    lookup = replace(options, mode="bm25", top_k=1, rerank=None, require=(), exclude=(), min_score=None)
    coined = coined_words(question, pieces) if pieces is not None else []
    words = {word.lower() for text in texts for word in _WORD.findall(text)} if coined else set()
    missing = []
    for name in [*question_names(question), *coined]:
        terms = set(analyze(name))
        if terms & seen or spelled_out(name, texts) or (name in coined and misspells(name, words)):
            continue
        found = search(name, lookup)
        if not terms & {term for hit in found for term in analyze(hit.chunk.text)}:
            missing.append(name)
    return missing
