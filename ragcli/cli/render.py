"""Everything the CLI writes: data to stdout (table, JSON, JSON Lines), messages to stderr."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Iterable

from rich.console import Console

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class OutputOptions:
    """The global --color / --quiet / --verbose choices, kept on the click context."""

    color: str = "auto"
    quiet: bool = False
    verbose: bool = False


def _current_context():
    # typer >= 0.22 vendors click as typer._click; older releases use click itself.
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import get_current_context
    return get_current_context(silent=True)


def output_options() -> OutputOptions:
    """The current command's global output options (defaults outside a command)."""
    context = _current_context()
    obj = context.find_root().obj if context is not None else None
    return obj if isinstance(obj, OutputOptions) else OutputOptions()


def _console(**kwargs: Any) -> Console:
    """A console honouring --color: auto follows the terminal and NO_COLOR (rich does both)."""
    color = output_options().color
    if color == "never":
        kwargs["no_color"] = True
    elif color == "always":
        kwargs.update(force_terminal=True, color_system="standard")
    return Console(**kwargs)


def stdout_console() -> Console:
    return _console(file=sys.stdout, soft_wrap=False)


def stderr_console() -> Console:
    """Messages and progress; silent under --quiet."""
    return _console(stderr=True, quiet=output_options().quiet)


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
