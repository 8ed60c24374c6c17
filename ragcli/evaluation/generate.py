"""Synthetic question/answer pairs from a corpus with the local language model.

In the manner of RAGTools.jl's ``build_qa_evals`` (sample chunks, ask the model for one
question and a short answer grounded in each chunk, keep the well-formed ones):

1. Documents come from a BEIR ``corpus.jsonl`` in the folder, else from reading the folder's
   files; they are visited in a seeded random order.
2. Each visited document is split into word windows and one window long enough to ask about
   is drawn at random.
3. The model sees only that window and must reply ``Question: ...?`` / ``Answer: ...``; a
   llama.cpp grammar holds it to that shape.
4. A reply is kept only if the question ends with "?", is a sentence rather than a fragment,
   and the answer is short and grounded: it occurs in the chunk, or most of its words do.
5. Each record names its chunk and document: ``{"_id", "question", "answers", "relevant",
   "chunk_id", "context"}``, so `rag eval retrieval` and `rag eval answers` read it as it is.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from ragcli.evaluation.datasets import CORPUS_FILE, read_corpus
from ragcli.evaluation.metrics import normalize_answer
from ragcli.types import Document, Progress

if TYPE_CHECKING:
    from ragcli.generation.llama import Generator

CHUNK_WORDS = 120
CHUNK_OVERLAP = 12
MIN_CHUNK_WORDS = 25
MAX_ANSWER_WORDS = 12
MIN_QUESTION_WORDS = 4
MAX_QUESTION_WORDS = 40
GROUNDING = 0.8  # share of the answer's words that must occur in the chunk
QUESTION_ECHO = 0.75  # share of the answer's words found in the question that makes it an echo

SYSTEM = (
    "You write reading-comprehension questions. Given a passage, write one question that the "
    "passage answers, and its answer: a few words copied from the passage."
)
USER = (
    "Passage:\n{context}\n\nWrite one question about a specific fact in the passage, and the short "
    "answer (a name, number, date or a few words) copied from the passage. Reply exactly in this "
    "form:\nQuestion: <question>?\nAnswer: <answer>"
)
# One worked example: tiny models copy its shape (a short, copied answer) far more often.
EXAMPLE = (
    "The Eiffel Tower was built for the 1889 World's Fair in Paris. Gustave Eiffel's company "
    "designed it, and it was the tallest structure in the world until 1930.",
    "Question: For which event was the Eiffel Tower built?\nAnswer: the 1889 World's Fair",
)
# Holds the model to the two-line shape; the question ends with "?", the answer is one line.
GRAMMAR = r"""root ::= "Question: " qtext "?\nAnswer: " atext
qtext ::= [^?\n] [^?\n]*
atext ::= [^\n] [^\n]*
"""
_REPLY = re.compile(
    r"question\s*[:：]\s*(?P<q>[^\n]+?\?)\s*\n+\s*answer\s*[:：]\s*(?P<a>[^\n]+)", re.IGNORECASE
)


@dataclass(frozen=True)
class Candidate:
    """A chunk to ask about: its document, position and text."""

    path: str
    chunk_id: str
    text: str


def parse_reply(text: str) -> tuple[str, str] | None:
    """``(question, answer)`` from a ``Question: ...?`` / ``Answer: ...`` reply, else None."""
    match = _REPLY.search(text.strip())
    if match is None:
        return None
    question = " ".join(match["q"].split())
    answer = " ".join(match["a"].split()).strip(" \"'`*").rstrip(".")
    return question, answer


def is_grounded(answer: str, context: str) -> bool:
    """The normalised answer occurs in the normalised chunk, or most of its words do."""
    wanted = normalize_answer(answer)
    text = normalize_answer(context)
    if not wanted:
        return False
    if f" {wanted} " in f" {text} ":
        return True
    return _share_present(answer, context) >= GROUNDING


def validate(question: str, answer: str, context: str) -> bool:
    """Keep well-formed pairs: a real question ending in "?", a short grounded answer."""
    words = question.split()
    if not question.endswith("?") or not MIN_QUESTION_WORDS <= len(words) <= MAX_QUESTION_WORDS:
        return False
    if not answer or len(answer.split()) > MAX_ANSWER_WORDS:
        return False
    # An answer made of the question's own words ("What is the highest mountain?" -> "the
    # highest mountain") tests nothing; small models do this often.
    if _share_present(answer, question) >= QUESTION_ECHO:
        return False
    return is_grounded(answer, context)


def _share_present(text: str, other: str) -> float:
    """Share of the normalised words of `text` that occur in `other`."""
    words = normalize_answer(text).split()
    present = set(normalize_answer(other).split())
    return sum(word in present for word in words) / len(words) if words else 1.0


def load_documents(folder: Path) -> list[Document] | list[Path]:
    """The corpus: BEIR documents when the folder has corpus.jsonl, else its readable files."""
    from ragcli.errors import UsageError
    from ragcli.ingest.readers import reader_for
    from ragcli.ingest.walk import FileFilter, walk_files

    folder = Path(folder).expanduser()
    if (folder / CORPUS_FILE).is_file():
        return list(read_corpus(folder / CORPUS_FILE))
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder: give a folder of documents or a BEIR folder")
    files = sorted(path for path in walk_files(folder.resolve(), FileFilter()) if reader_for(path))
    if not files:
        raise UsageError(f"{folder} holds no readable documents (txt, md, pdf, docx, html)")
    return files


def _document(item: Document | Path) -> Document | None:
    from ragcli.errors import ReaderError
    from ragcli.ingest.readers import read_document

    if isinstance(item, Document):
        return item
    try:
        return read_document(item)
    except ReaderError:
        return None  # an unreadable file simply yields no questions


def pick_chunk(document: Document, rng: random.Random) -> Candidate | None:
    """One random word window of the document long enough to ask about, or None."""
    from ragcli.ingest.splitting import split

    spans = [
        span
        for span in split(document.text, split_by="word", chunk_size=CHUNK_WORDS, chunk_overlap=CHUNK_OVERLAP)
        if len(span.text.split()) >= MIN_CHUNK_WORDS
    ]
    if not spans and len(document.text.split()) >= MIN_CHUNK_WORDS // 2:
        return Candidate(document.path, f"{document.path}#0", document.text.strip())
    if not spans:
        return None
    span = rng.choice(spans)
    return Candidate(document.path, f"{document.path}#{span.order}", span.text.strip())


def candidates(items: Sequence[Document | Path], rng: random.Random, attempts: int) -> Iterator[Candidate]:
    """Up to `attempts` chunks: documents in a seeded random order, cycling when there are few."""
    order = list(range(len(items)))
    made = 0
    while made < attempts and order:
        rng.shuffle(order)
        for position in order:
            document = _document(items[position])
            candidate = pick_chunk(document, rng) if document is not None else None
            if candidate is not None:
                made += 1
                yield candidate
                if made >= attempts:
                    return
        if made == 0:
            return


def ask_for_pair(
    generator: Generator, candidate: Candidate, *, max_tokens: int = 64
) -> tuple[str, str] | None:
    """Ask the model for one question/answer pair about the chunk; None when it is unusable."""
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER.format(context=EXAMPLE[0])},
        {"role": "assistant", "content": EXAMPLE[1]},
        {"role": "user", "content": USER.format(context=candidate.text)},
    ]
    reply = generator.complete(messages, max_tokens=max_tokens, temperature=0.0, grammar=GRAMMAR)
    pair = parse_reply(reply)
    if pair is None or not validate(*pair, candidate.text):
        return None
    return pair


def generate_qa(
    folder: Path,
    generator: Generator,
    *,
    n: int = 50,
    seed: int = 0,
    max_attempts: int | None = None,
    progress: Progress | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield up to `n` synthetic QA records, one per sampled chunk, as they are made.

    Args:
        folder: a folder of documents, or a BEIR folder (its corpus.jsonl is used).
        generator: the language model (`ragcli.generation.llama.Generator`).
        n: records wanted.
        seed: sampling seed; the same seed, corpus and model give the same records.
        max_attempts: chunks tried at most (default 4 x n), since small models often fail.
        progress: receives ``start(n)`` and ``advance(chunk_id, "kept"|"dropped")``.

    Raises:
        UsageError: the folder has no readable documents.
    """
    items = load_documents(folder)
    rng = random.Random(seed)
    if progress is not None:
        progress.start(n)
    kept = 0
    for candidate in candidates(items, rng, max_attempts or 4 * n):
        pair = ask_for_pair(generator, candidate)
        if pair is None:
            continue
        kept += 1
        if progress is not None:
            progress.advance(candidate.chunk_id, "kept")
        yield {
            "_id": f"gen{kept:04d}",
            "question": pair[0],
            "answers": [pair[1]],
            "relevant": [candidate.path],
            "chunk_id": candidate.chunk_id,
            "context": candidate.text,
        }
        if kept >= n:
            return
