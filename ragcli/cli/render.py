"""Everything the CLI writes: data to stdout (table, JSON, JSON Lines), messages to stderr."""

from __future__ import annotations

import json
import sys
from typing import Any, Iterable

from rich.console import Console

SCHEMA_VERSION = 1


def stdout_console() -> Console:
    return Console(file=sys.stdout, soft_wrap=False)


def stderr_console() -> Console:
    """Messages and progress; rich itself honours NO_COLOR and non-terminals."""
    return Console(stderr=True)


def emit_json(kind: str, payload: dict[str, Any]) -> None:
    """One JSON document on stdout, with the schema version and what it describes."""
    document = {"schema_version": SCHEMA_VERSION, "kind": kind, **payload}
    sys.stdout.write(json.dumps(document, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def emit_jsonl(records: Iterable[dict[str, Any]]) -> None:
    """One JSON object per line on stdout, flushed per line for pipes."""
    for record in records:
        sys.stdout.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()


def human_size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
