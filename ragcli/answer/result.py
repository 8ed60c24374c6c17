"""`Answer`: a finished answer with everything needed to check it, and its JSON shape."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from ragcli.answer.context import Source
from ragcli.answer.support import QUOTE_LINE, SentenceSupport
from ragcli.places import place
from ragcli.types import Hit


@dataclass(frozen=True)
class Answer:
    """A finished answer with everything needed to check it.

    Attributes:
        question: as asked.
        text: the answer (citations to missing sources removed).
        abstained: True when the documents held nothing relevant or the model declined.
        sources: the numbered context given to the model.
        citations: source numbers cited in `text` (all valid), or inferred (see below).
        support: per-sentence support annotation.
        timings: seconds: rewrite, retrieve, rerank, prompt (context + messages),
            first_token (from the start of the call), generate, total.
        tokens: prompt and completion tokens as the model counted them.
        cached: served from the answer cache.
        retrieved: every hit retrieved before context building (not cached).
        invalid_citations: numbers the model cited that name no source (removed from `text`).
        citations_inferred: the model cited nothing; `citations` come from the support annotation.
        model: the model file name.
        short: the short answer (no citation) when one is shown, else None.
        pages: citation number -> page of the quoted sentence, where it differs from knowing
            only the source's first page (evidence answers).
    """

    question: str
    text: str
    abstained: bool
    sources: tuple[Source, ...] = ()
    citations: tuple[int, ...] = ()
    support: tuple[SentenceSupport, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    tokens: Mapping[str, int] = field(default_factory=dict)
    cached: bool = False
    retrieved: tuple[Hit, ...] = ()
    invalid_citations: tuple[int, ...] = ()
    citations_inferred: bool = False
    model: str = ""
    short: str | None = None
    pages: Mapping[int, int] = field(default_factory=dict)

    def page(self, number: int) -> int | None:
        """The page cited as ``[number]``: the quoted sentence's page, else the source's first."""
        if number in self.pages:
            return self.pages[number]
        source = self.source(number)
        return source.page if source is not None else None

    def is_verbatim_quote(self, line: str) -> bool:
        """A line quoting a source word for word: ``"...text..." [n]`` (or ``[n] [m]``), the
        quoted words in one of the sources (whitespace collapsed)."""
        match = QUOTE_LINE.fullmatch(line)
        if match is None:
            return False
        quoted = " ".join(match.group(1).split())
        return any(quoted in " ".join(source.text.split()) for source in self.sources)

    def is_outline(self, line: str) -> bool:
        """A document's title and section headings as a summary shows them (``Title (sections:
        A; B) [1]``), each a line of the cited source: no claim of the answer's own."""
        match = _OUTLINE.fullmatch(line)
        if match is None:
            return False
        parts = [match.group(1)] + (match.group(2).split("; ") if match.group(2) else [])
        wanted = {" ".join(part.split()) for part in parts}
        cited = _trailing_citations(line)
        for source in self.sources:
            if source.number in cited:
                lines = {" ".join(text.lstrip("#").split()) for text in source.text.splitlines()}
                if wanted <= lines:
                    return True
        return False

    def quoted_from(self, number: int) -> str:
        """The lines of the answer that cite source `number` (where its rows and pages are read)."""
        return "\n".join(line for line in self.text.split("\n") if number in _trailing_citations(line))

    def place(self, number: int) -> str | None:
        """Where ``[number]`` points in words ("slide 3", "sheet 2, rows 7-12"), or None where
        its path and page say it all (`ragcli.places.place`)."""
        source = self.source(number)
        return place(source.path, self.page(number), self.quoted_from(number)) if source else None

    def source(self, number: int) -> Source | None:
        """The source cited as ``[number]``."""
        return next((source for source in self.sources if source.number == number), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `rag ask --json` (without the envelope)."""
        return {
            "question": self.question,
            "answer": self.text,
            "abstained": self.abstained,
            "model": self.model,
            "short_answer": self.short,
            "citations": [
                {"number": n, "path": s.path, "page": self.page(n), "place": self.place(n)}
                for n in self.citations
                if (s := self.source(n)) is not None
            ],
            "citations_inferred": self.citations_inferred,
            "invalid_citations": list(self.invalid_citations),
            "sources": [asdict(source) for source in self.sources],
            "support": [asdict(item) for item in self.support],
            "timings": {key: round(value, 4) for key, value in self.timings.items()},
            "tokens": dict(self.tokens),
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> "Answer":
        """Rebuild an answer from `to_dict` output (the answer cache's format)."""
        sources = tuple(Source(**{**s, "chunk_ids": tuple(s["chunk_ids"])}) for s in record["sources"])
        return cls(
            question=record["question"],
            text=record["answer"],
            abstained=record["abstained"],
            sources=sources,
            citations=tuple(c["number"] for c in record["citations"]),
            support=tuple(SentenceSupport(**item) for item in record["support"]),
            timings=record["timings"],
            tokens=record["tokens"],
            cached=record["cached"],
            invalid_citations=tuple(record["invalid_citations"]),
            citations_inferred=record["citations_inferred"],
            model=record["model"],
            short=record.get("short_answer"),
            pages={c["number"]: c["page"] for c in record["citations"] if c.get("page") is not None},
        )


_TRAILING = re.compile(r"(?:\s*\[\d+\])+\s*$")


# A summary's first line: the title, its worded section headings, the citation.
_OUTLINE = re.compile(r"\s*(.+?)(?: \(sections: (.+)\))?(?:\s*\[\d+\])+\s*")


def _trailing_citations(line: str) -> set[int]:
    """The source numbers a line ends by citing (``"..." [1] [3]`` -> {1, 3})."""
    match = _TRAILING.search(line)
    return {int(n) for n in re.findall(r"\d+", match.group())} if match else set()
