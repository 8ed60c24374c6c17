"""Plain value types passed between the pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol, Self

from ragcli.choices import plain_value


@dataclass(frozen=True)
class Document:
    """A read document: its text and the metadata stored beside it.

    Paged formats (PDF) separate pages with a form feed (``\\f``), so page numbers can be
    recovered from character offsets and the ``page`` split can use them.
    """

    path: str
    text: str
    file_type: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Span:
    """One window of a document produced by the splitter.

    ``start``/``end`` are character offsets into the document text, so
    ``text == document.text[start:end]`` up to the separators the splitter keeps.
    """

    text: str
    order: int
    start: int
    end: int


@dataclass(frozen=True)
class ChunkSettings:
    """How one group of chunks is cut: unit, window size and overlap (AdalFlow semantics)."""

    split_by: str = "token"
    chunk_size: int = 256
    chunk_overlap: int = 25


@dataclass(frozen=True)
class IngestOptions:
    """What an ingest reads and how it cuts it, as a front end was given it: a `None` or empty
    field was not given (the root's remembered value is kept, else the settings decide).

    `split_by`, `chunk_size` and `chunk_overlap` override the group's `ChunkSettings` one by
    one; `include`/`exclude` (gitignore-style patterns) replace the roots' remembered ones;
    `forget_filters` reads the roots without theirs."""

    group: str | None = None
    split_by: str | None = None
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    forget_filters: bool = False

    def __post_init__(self) -> None:
        # typer passes a choice as an enum member, a library caller patterns as a list
        object.__setattr__(self, "split_by", plain_value(self.split_by))
        object.__setattr__(self, "include", tuple(self.include or ()))
        object.__setattr__(self, "exclude", tuple(self.exclude or ()))

    def chunk_flags(self) -> dict[str, Any]:
        """The chunk settings given, by `ChunkSettings` field name (those not given left out)."""
        given = {
            "split_by": self.split_by,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
        }
        return {name: value for name, value in given.items() if value is not None}

    @property
    def filters_given(self) -> bool:
        """Whether the roots' remembered patterns are replaced (patterns given, or forgotten)."""
        return bool(self.include or self.exclude) or self.forget_filters


@dataclass(frozen=True)
class Chunk:
    """A stored chunk with where it came from."""

    id: int
    doc_id: int
    group: str
    order: int
    text: str
    start: int
    end: int
    page: int | None
    path: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


_new_object = object.__new__


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with its score and, for fused modes, each retriever's part."""

    chunk: Chunk
    score: float
    rank: int = 0
    sources: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The hit as JSON-ready data: the shape of `rag query --json` and of the agents' search;
        ``place`` is where it is in words ("slide 3"), None where path and page say it all."""
        from ragcli.places import place

        chunk = self.chunk
        return {
            "rank": self.rank,
            "score": self.score,
            "path": chunk.path,
            "page": chunk.page,
            "place": place(chunk.path, chunk.page, chunk.text),
            "chunk_id": chunk.id,
            "group": chunk.group,
            "text": chunk.text,
            "sources": {name: dict(part) for name, part in self.sources.items()},
        }

    @classmethod
    def ranked(cls, found: Iterable[tuple[Chunk, float]]) -> list["Hit"]:
        """`[Hit(chunk, score, rank) ...]` for (chunk, score) pairs best first, ranks from 1,
        without the frozen dataclass's `__init__`, which sets each field through
        `object.__setattr__`: a warm BM25 query makes ten hits, and that `__init__` cost more
        than half a microsecond each (this, about a quarter)."""
        hits = []
        for rank, (chunk, score) in enumerate(found, 1):
            hit = _new_object(cls)
            fields = hit.__dict__
            fields["chunk"], fields["score"], fields["rank"], fields["sources"] = chunk, score, rank, {}
            hits.append(hit)
        return hits


class Closable:
    """Closed at the end of a ``with`` block: `__enter__` gives the object itself and
    `__exit__` calls its `close`."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


class Progress(Protocol):
    """Receives progress of a long run; the CLI draws it, the library never prints."""

    def start(self, total: int) -> None: ...

    def advance(self, path: str, status: str) -> None: ...
