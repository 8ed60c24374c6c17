"""Reading back what an index stores: a document, one of its pages, or one chunk (`rag get`).

An index keeps no copy of a whole document, only its chunks with their character offsets
(`start`, `end`) into the text the reader produced. A document's text is rebuilt from the
chunks of one group: sorted by offset, overlaps cut, and a gap left by a dropped
whitespace-only window filled with one newline. Paged formats keep their form feeds
(``\\f``) inside chunks, so page N is the N-th form-feed-separated part of that text.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ragcli.errors import NotFound, UsageError
from ragcli.text import PAGE_BREAK
from ragcli.store.interface import Backend
from ragcli.store.chooser import open_backend

_PAGE_SUFFIX = re.compile(r"^(?P<path>.+):(?P<page>\d+)$")


@dataclass(frozen=True)
class StoredText:
    """A document, page or chunk as stored, with where it comes from.

    Attributes:
        kind: "document", "page" or "chunk".
        path: the document's path.
        text: the stored text.
        page: the page (pages count from 1), or None for a whole unpaged document.
        pages: how many pages the document has (1 when it has no form feeds).
        group: the chunk group the text was rebuilt from.
        chunk_id: the chunk's id (kind "chunk" only).
        chunk_ids: the chunks the text was rebuilt from, in order.
        order, start, end: the chunk's position (kind "chunk" only).
        metadata: the document's metadata (file_type, size, dates, title, ...).
    """

    kind: str
    path: str
    text: str
    page: int | None = None
    pages: int = 1
    group: str | None = None
    chunk_id: int | None = None
    chunk_ids: tuple[int, ...] = ()
    order: int | None = None
    start: int | None = None
    end: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["chunk_ids"] = list(self.chunk_ids)
        return data


def parse_target(target: str) -> tuple[str, int | None]:
    """`PATH[:PAGE]` -> (path, page). A path that itself ends in ':<digits>' wins when it exists."""
    match = _PAGE_SUFFIX.match(target)
    if match and not Path(target).expanduser().exists():
        return match["path"], int(match["page"])
    return target, None


def stitch(pieces: Sequence[tuple[int, int, str]]) -> str:
    """Rebuild a text from (start, end, text) windows that may overlap or leave gaps."""
    parts: list[str] = []
    covered = None
    for start, end, text in sorted(pieces):
        if covered is None or start >= covered:
            if covered is not None and start > covered:
                parts.append("\n")  # a dropped whitespace-only window
            parts.append(text)
        elif end > covered:
            parts.append(text[covered - start :])
        covered = end if covered is None else max(covered, end)
    return "".join(parts)


def get_chunk(index: Path, chunk_id: int) -> StoredText:
    """One chunk by id.

    Raises:
        NotIndexed: there is no index.
        NotFound: no chunk has this id (ids change when a document is re-ingested).
    """
    if not 1 <= chunk_id < 2**63:  # SQLite's integers: a larger id cannot exist
        raise NotFound(f"no chunk {chunk_id} in the index at {index}: chunk ids are what a query shows")
    store = open_backend(index)
    try:
        chunk = store.chunks([chunk_id]).get(chunk_id)
    finally:
        store.close()
    if chunk is None:
        raise NotFound(
            f"no chunk {chunk_id} in the index at {index}: chunk ids change when a file is "
            "re-ingested; run the query again for current ids"
        )
    return StoredText(
        kind="chunk",
        path=chunk.path,
        text=chunk.text,
        page=chunk.page,
        group=chunk.group,
        chunk_id=chunk.id,
        chunk_ids=(chunk.id,),
        order=chunk.order,
        start=chunk.start,
        end=chunk.end,
        metadata=dict(chunk.metadata),
    )


def get_document(
    index: Path, target: str, *, page: int | None = None, group: str | None = None
) -> StoredText:
    """A stored document, or one page of it, by path (`PATH` or `PATH:PAGE`).

    Args:
        index: the index directory.
        target: the document's path as `rag ls` shows it, or relative to the current folder;
            `PATH:PAGE` selects a page.
        page: a page number (overrides one given in `target`).
        group: the chunk group to rebuild the text from (default: "medium", else the first).

    Raises:
        NotIndexed: there is no index.
        NotFound: the path is not indexed, the document has no such page, or it was never
            chunked in the group (an indexed empty document is found, with empty text).
        UsageError: a page below 1.
    """
    path, parsed_page = parse_target(target)
    page = page if page is not None else parsed_page
    if page is not None and page < 1:
        raise UsageError(f"page {page}: pages count from 1")
    store = open_backend(index)
    try:
        record = _find_document(store, path)
        chosen = group or _group_of(store, record["id"])
        rows = store.document_chunks(record["id"], chosen)
        emptied = None if rows else _group_emptied_in(store, record["id"], chosen, group is not None)
    finally:
        store.close()
    if not rows and emptied is None:
        raise NotFound(f"{record['path']} has no chunks in group '{chosen}': see `rag status` for groups")
    group = emptied or chosen
    text = stitch([(start, end, chunk_text) for _, start, end, chunk_text in rows])
    pages = text.split(PAGE_BREAK)
    metadata = _metadata(record)
    common = dict(
        path=record["path"],
        pages=len(pages),
        group=group,
        chunk_ids=tuple(r[0] for r in rows),
        metadata=metadata,
    )
    if page is None:
        return StoredText(kind="document", text=text, **common)
    if page > len(pages):
        raise NotFound(f"{record['path']} has {len(pages)} page(s), not {page}")
    return StoredText(kind="page", text=pages[page - 1], page=page, **common)


def _find_document(store: Backend, path: str) -> dict[str, Any]:
    from ragcli.ingest.walk import display_path

    # A name that is not UTF-8 arrives from argv with lone surrogates; the index stores it
    # with `\xNN` escapes (as `rag ls` shows it), so both spellings are looked up.
    resolved = str(Path(path).expanduser().resolve())
    candidates = list(dict.fromkeys([display_path(path), display_path(resolved)]))
    for candidate in candidates:
        record = store.document_by_path(candidate)
        if record is not None:
            return record
    raise NotFound(f"{path} is not in the index at {store.path}: see `rag ls` for the indexed paths")


def _group_emptied_in(store: Backend, doc_id: int, group: str, asked: bool) -> str | None:
    """The group the document was chunked in although it has no chunks there (its text was
    empty or only whitespace): `group`, or where no group was asked for, any group; else None.

    An empty document is indexed (`rag ls` lists it) but gives no chunks, so only its record
    of having been chunked (`Backend.chunked_hash`) tells it from one never ingested there.
    """
    candidates = [group] if asked else dict.fromkeys([group, *store.groups()])
    return next((name for name in candidates if store.chunked_hash(doc_id, name) is not None), None)


def _group_of(store: Backend, doc_id: int) -> str:
    from ragcli.retrieval.search import default_group

    return default_group(dict.fromkeys(store.document_groups(doc_id)))


def _metadata(record: dict[str, Any]) -> dict[str, Any]:
    meta = record.get("metadata") or {}
    meta = dict(json.loads(meta) if isinstance(meta, str) else meta)
    for key in ("file_name", "file_type", "size", "modified", "created", "title", "ingested_at"):
        if record.get(key) is not None:
            meta[key] = record[key]
    return meta
