"""A group's chunk settings (given, stored or preset) and a document cut by them into spans."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ragcli.choices import DEFAULT_GROUP
from ragcli.ingest.splitting import PRESETS, section_bounds, split, validate_settings
from ragcli.store.interface import Backend
from ragcli.types import ChunkSettings, Document, Span

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder

# Longest chunk text, in characters. A window of words or sentences can still be one huge
# "word" (a base64 blob, a line of CJK without spaces); cut there, every chunk and its BM25
# terms fit a 65,535-byte text field (Milvus VARCHAR; CJK terms take ~7 bytes a character),
# and no chunk holds more than an embedder reads (a few hundred tokens) many times over.
MAX_CHUNK_CHARS = 8_000


def chunking_for(store: Backend, group: str, chunking: ChunkSettings | None) -> ChunkSettings:
    """Explicit settings, else the group's stored ones, else its preset, else the default preset."""
    if chunking is not None:
        validate_settings(chunking)
        return chunking
    return store.groups().get(group) or PRESETS.get(group, PRESETS[DEFAULT_GROUP])


def chunking_override(index: Path, group: str, given: Mapping[str, Any]) -> ChunkSettings | None:
    """Settings from the flags given (`IngestOptions.chunk_flags`), the rest from the group's
    current settings or preset; None when none is given."""
    from ragcli.store.directory import DATABASE_NAME, IndexDirectory

    if not given:
        return None
    base = PRESETS.get(group, PRESETS[DEFAULT_GROUP])
    if (index / DATABASE_NAME).is_file():
        store = IndexDirectory.open(index)
        try:
            base = store.groups().get(group, base)
        finally:
            store.close()
    settings = replace(base, **given)
    validate_settings(settings)
    return settings


def split_document(doc: Document, settings: ChunkSettings, embedder: Embedder) -> Iterator[list[Span]]:
    """The document's spans, one list per section (see `section_bounds`), offsets and order
    counted over the whole text. Memory stays bounded by a section, not the document."""
    tokenize = embedder.token_offsets if settings.split_by == "token" else None
    order = 0
    for start, end in section_bounds(doc.text):
        spans = split(
            doc.text[start:end],
            split_by=settings.split_by,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            tokenize=tokenize,
        )
        capped = list(_capped(spans))
        yield [
            Span(span.text, order + i, span.start + start, span.end + start) for i, span in enumerate(capped)
        ]
        order += len(capped)


def _capped(spans: Sequence[Span]) -> Iterator[Span]:
    """`spans`, with any longer than `MAX_CHUNK_CHARS` cut into consecutive pieces."""
    for span in spans:
        if len(span.text) <= MAX_CHUNK_CHARS:
            yield span
            continue
        for offset in range(0, len(span.text), MAX_CHUNK_CHARS):
            piece = span.text[offset : offset + MAX_CHUNK_CHARS]
            begin = min(span.start + offset, span.end)
            yield Span(piece, span.order, begin, min(begin + len(piece), span.end))
