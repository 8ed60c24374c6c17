"""The JSON records every front end writes: `rag ... --json` on stdout and `rag serve` over HTTP.

One place for the shapes `docs/json.md` documents, so the CLI and the HTTP API cannot drift:
the envelope (`schema_version`, `kind`). Hits, answers, stored texts, status and document lists
are already plain data from the library (`Hit.to_dict`, `Answer.to_dict`, `StoredText.to_dict`,
`Index.status`, `Index.documents`).
"""

from __future__ import annotations

from typing import Any, Mapping

SCHEMA_VERSION = 1


def json_document(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """A `--json` document: the schema version and what it describes, then the payload."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **payload}
