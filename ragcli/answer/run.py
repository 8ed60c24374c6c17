"""`AnswerRun`: the state of answering one question (options, clocks, the hits seen), and how
it ends: an abstention, or a finished `Answer` with its citations checked and support annotated."""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

from ragcli.answer.context import Source
from ragcli.answer.options import AskOptions
from ragcli.answer.prompting import NOT_FOUND, parse_citations, says_not_found, strip_invalid_citations
from ragcli.answer.result import Answer
from ragcli.answer.support import SentenceSupport
from ragcli.generation.llama import Generator
from ragcli.types import Hit


# An answer's timings, in the order its JSON lists them (then "total"): seconds each stage took,
# "first_token" from the start of the call.
STAGE_TIMINGS = ("rewrite", "retrieve", "rerank", "prompt", "first_token", "generate")


class AnswerRun:
    """The state of answering one question: options, clocks and the hits seen so far."""

    def __init__(self, question: str, options: AskOptions, started: float) -> None:
        self.question = question
        self.options = options
        self.started = started
        self.timings: dict[str, float] = {}
        self.retrieved: tuple[Hit, ...] = ()
        self._last = started

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = now - self._last
        self._last = now

    def _totals(self) -> dict[str, float]:
        total = time.perf_counter() - self.started
        self.timings.setdefault("first_token", total)
        return {name: self.timings.get(name, 0.0) for name in STAGE_TIMINGS} | {"total": total}

    def abstain(
        self,
        sources: tuple[Source, ...] = (),
        text: str = NOT_FOUND,
        tokens: Mapping[str, int] | None = None,
        model: str = "",
    ) -> Answer:
        """The answer when nothing relevant was found (or the model declined)."""
        return Answer(
            self.question,
            text,
            True,
            sources,
            timings=self._totals(),
            tokens=dict(tokens or {"prompt": 0, "completion": 0}),
            retrieved=self.retrieved,
            model=model,
        )

    def finish(
        self,
        text: str,
        sources: tuple[Source, ...],
        generator: Generator | None,
        annotate: Callable[..., tuple[SentenceSupport, ...]] | None,
    ) -> Answer:
        """Check citations, annotate support and detect a declined answer (step 10).

        `generator` is None for an extractive answer (no model wrote it).
        """
        tokens = _usage(generator, text) if generator is not None else {"prompt": 0, "completion": 0}
        model_id = generator.model_id if generator is not None else "evidence"
        if generator is not None and says_not_found(text):
            return self.abstain(sources, text.strip() or NOT_FOUND, tokens, model_id)
        citations, invalid = parse_citations(text, len(sources))
        text = strip_invalid_citations(text, len(sources)).strip() if invalid else text.strip()
        support = annotate(text, sources) if annotate is not None else ()
        inferred = not citations
        if inferred:
            citations = _supported_sources(support)
        return Answer(
            self.question,
            text,
            False,
            sources,
            citations,
            support,
            self._totals(),
            tokens,
            retrieved=self.retrieved,
            invalid_citations=invalid,
            citations_inferred=inferred,
            model=model_id,
        )


def _supported_sources(support: Sequence[SentenceSupport]) -> tuple[int, ...]:
    """Each supported or partially supported sentence's best source, in answer order, once."""
    found: list[int] = []
    for item in support:
        if item.label != "unsupported" and item.source is not None and item.source not in found:
            found.append(item.source)
    return tuple(found)


def _usage(generator: Generator, text: str) -> dict[str, int]:
    """Token counts the model reported for its last call, else the completion counted here."""
    usage = getattr(generator, "last_usage", None)
    if usage:
        return {"prompt": int(usage.get("prompt", 0)), "completion": int(usage.get("completion", 0))}
    return {"prompt": 0, "completion": generator.count_tokens(text)}
