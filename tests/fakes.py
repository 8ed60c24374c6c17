"""Deterministic stand-ins for the models, for fast logic tests."""

from __future__ import annotations

import hashlib
import re

import numpy as np

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Bag-of-words vectors from hashed lower-cased words: similar texts get similar vectors."""

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.model_id = f"fake-hash-{dimension}"
        self.fingerprint = f"fake-hash-{dimension}-v1"
        self.max_tokens = 512
        self.calls = 0
        self.embedded_texts: list[str] = []

    def embed(self, texts, batch_size: int = 32) -> np.ndarray:
        self.calls += 1
        self.embedded_texts.extend(texts)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.md5(word.encode()).digest()
                vectors[row, digest[0] % self.dimension] += 1.0
            norm = np.linalg.norm(vectors[row])
            vectors[row] = vectors[row] / norm if norm else vectors[row]
            if not norm:
                vectors[row, 0] = 1.0
        return vectors

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in _WORD.finditer(text)]


class ScriptedGenerator:
    """A Generator that returns canned replies and records every call.

    `replies` is a list (used in turn; the last one repeats) or a function of the last
    user message. Tokens are counted as words and punctuation marks.
    """

    def __init__(self, replies, n_ctx: int = 2048) -> None:
        self.model_id = "fake-scripted"
        self.n_ctx = n_ctx
        self._replies = replies
        self.calls: list[dict] = []

    def complete(self, messages, *, max_tokens=256, temperature=0.0, stop=(), grammar=None) -> str:
        self.calls.append({"messages": list(messages), "max_tokens": max_tokens, "grammar": grammar})
        if callable(self._replies):
            return self._replies(messages[-1]["content"])
        return self._replies[min(len(self.calls), len(self._replies)) - 1]

    def stream(self, messages, **kwargs):
        yield self.complete(messages, **kwargs)

    def count_tokens(self, text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))


# A source as the cited prompt shows it ("[1] path" then the text) or as the grounded prompt
# does ("[1] text" on one line).
_SOURCE_BLOCK = re.compile(r"^\[(\d+)\] (?:[^\n]*\n(?!\n)([^\n]+)|([^\n]+))", re.MULTILINE)


class EchoGenerator:
    """A deterministic chat model: answers with the first sentence of source [1], cited.

    `reply` overrides that: a fixed string, or a function of the messages. Tokens are
    whitespace-separated words; `stream` yields them one by one (with their spaces).
    Every call is recorded in `calls` as (messages, keyword arguments).
    """

    def __init__(self, reply=None, *, n_ctx: int = 2048, model_id: str = "echo") -> None:
        self.reply = reply
        self.n_ctx = n_ctx
        self.model_id = model_id
        self.fingerprint = f"{model_id}-v1"
        self.calls: list[tuple[list, dict]] = []
        self.last_usage = {"prompt": 0, "completion": 0}

    def _answer(self, messages) -> str:
        if callable(self.reply):
            return self.reply(messages)
        if self.reply is not None:
            return self.reply
        match = _SOURCE_BLOCK.search(messages[-1]["content"])
        if match is None:
            return "I could not find this in your documents."
        first = re.split(r"(?<=[.!?])\s", (match.group(2) or match.group(3)).strip())[0].rstrip(".")
        return f"{first} [{match.group(1)}]."

    def complete(self, messages, *, max_tokens=256, temperature=0.0, stop=(), grammar=None) -> str:
        return "".join(
            self.stream(messages, max_tokens=max_tokens, temperature=temperature, stop=stop, grammar=grammar)
        )

    def stream(self, messages, *, max_tokens=256, temperature=0.0, stop=(), grammar=None):
        self.calls.append((list(messages), {"max_tokens": max_tokens, "temperature": temperature}))
        pieces = re.findall(r"\S+\s*", self._answer(messages))[:max_tokens]
        self.last_usage = {
            "prompt": sum(self.count_tokens(m["content"]) for m in messages),
            "completion": len(pieces),
        }
        yield from pieces

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def hits_for(texts) -> list:
    """First-stage hits over `texts`: chunk ids 100, 101, ..., scores 10, 9, ..., a "bm25" source."""
    from ragcli.types import Chunk, Hit

    hits = []
    for index, text in enumerate(texts):
        chunk = Chunk(
            id=100 + index,
            doc_id=index,
            group="medium",
            order=0,
            text=text,
            start=0,
            end=len(text),
            page=None,
            path=f"doc{index}.txt",
        )
        score = 10.0 - index
        hits.append(
            Hit(
                chunk=chunk,
                score=score,
                rank=index + 1,
                sources={"bm25": {"rank": index + 1, "score": score}},
            )
        )
    return hits


# A short sports passage several answer tests index (tests/conftest.py: bowl_index).
BOWL = (
    "The Broncos defeated the Pittsburgh Steelers in the divisional round. Peyton Manning was 39 years "
    "old when he played in Super Bowl 50. The game was played on February 7, 2016, at Levi's Stadium "
    "in Santa Clara."
)
