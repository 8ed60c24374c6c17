"""Questions about a whole document ("summarize X", "what is X about"), answered from it.

When a question asks what a document says as a whole (`asks_about_document`), retrieving the
few chunks most like the question's words misses the point: the answer covers the document
the question names, which is the top hit's document (its file name or title matches the
question best, or ``--doc`` chose it). Without a capable model the answer is an extractive
summary (`extractive_summary`): the document's title and headings, then its most central
sentences (nearest, by embedding, to the mean of all its sentences), quoted in document
order within the evidence budget.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ragcli.answer.context import Source
from ragcli.answer.evidence import is_title, quote
from ragcli.answer.sentences import Sentence, sentences_of
from ragcli.embedding.base import Embedder

# The forms of a question about a document as a whole (English).
_ABOUT_DOCUMENT = re.compile(
    r"\b(summari[sz]\w*|summary|overview|gist|tl;?dr|main (?:idea|point|topic)s?|"
    r"what(?:'s| is| are)\b.{1,80}\babout|what does\b.{1,80}\b(?:cover|say|describe))\b",
    re.IGNORECASE,
)
HEADINGS_SHOWN = 8


def asks_about_document(question: str) -> bool:
    """Whether the question asks what a document says as a whole."""
    return bool(_ABOUT_DOCUMENT.search(question))


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


def extractive_summary(source: Source, embedder: Embedder | None, budget: int) -> tuple[str, list[Sentence]]:
    """A summary of one whole-document source: title and headings line, central sentences quoted."""
    sentences = sentences_of([source.text])
    titles = [" ".join(s.text.lstrip("#").split()) for s in sentences if is_title(s.text)]
    body = [s for s in sentences if not is_title(s.text) and not s.text.lstrip().startswith("|")]
    body = [s for s in body if len(s.text.split()) >= 4]
    lines = []
    if titles:
        shown = titles[1 : 1 + HEADINGS_SHOWN]
        lines.append(
            titles[0] + (f" (sections: {'; '.join(shown)})" if shown else "") + f" [{source.number}]"
        )
    chosen, left = [], budget
    for sentence in central_sentences(body, embedder):
        cost = len(sentence.text) + 6
        if chosen and cost > left:
            continue
        chosen.append(sentence)
        left -= cost
    chosen.sort(key=lambda s: s.start)
    lines += [quote(sentence) for sentence in chosen]
    return "\n".join(lines), chosen
