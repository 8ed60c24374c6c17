"""The JSON records every front end writes: `rag ... --json` on stdout and `rag serve` over HTTP.

One place for the shapes `docs/json.md` documents, so the CLI and the HTTP API cannot drift:
the envelope (`schema_version`, `kind`) and a query hit. Answers, stored texts, status and
document lists are already plain data from the library (`Answer.to_dict`, `StoredText.to_dict`,
`Index.status`, `Index.documents`).
"""

from __future__ import annotations

from typing import Any, Mapping

SCHEMA_VERSION = 1


def json_document(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """A `--json` document: the schema version and what it describes, then the payload."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **payload}


def hit_record(hit: Any) -> dict[str, Any]:
    """A query hit as `rag query --json` prints it (`docs/json.md`)."""
    chunk = hit.chunk
    return {
        "rank": hit.rank,
        "score": hit.score,
        "path": chunk.path,
        "page": chunk.page,
        "chunk_id": chunk.id,
        "group": chunk.group,
        "text": chunk.text,
        "sources": {name: dict(part) for name, part in hit.sources.items()},
    }
