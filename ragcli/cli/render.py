"""Everything the CLI writes: data to stdout (table, TSV, CSV, JSON, JSON Lines), messages to stderr.

Rules every command follows (see README, "Shell"):
- Off a terminal nothing wraps and nothing is cut; a human table becomes one tab-separated
  line per record, full values, no header (as `gh` does). `--format tsv|csv` add a header.
- Human output shows control characters escaped (`\\x1b`, `\\n`), so a file name cannot move
  the cursor or retitle the terminal; JSON and CSV escape by their own rules.
- `--color never` (and NO_COLOR) means no escape sequence at all, not only no colour.
- A closed pipe (`rag ls | head -1`) ends quietly with exit 0.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from rich.console import Console

from ragcli.records import SCHEMA_VERSION as SCHEMA_VERSION  # re-exported: the commands import it here
from ragcli.records import json_document


class ListFormat(str, Enum):
    """Output formats of commands that list records."""

    table = "table"
    tsv = "tsv"
    csv = "csv"
    json = "json"
    jsonl = "jsonl"


@dataclass(frozen=True)
class OutputOptions:
    """The global --color / --quiet / --verbose choices, kept on the click context."""

    color: str = "auto"
    quiet: bool = False
    verbose: int = 0


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


# -- escaping -----------------------------------------------------------------------------
# C0/C1 controls, DEL, lone surrogates (bytes of a non-UTF-8 file name, via surrogateescape)
# and the bidirectional overrides that can make a name display as another.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape_char(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: object) -> str:
    """`text` safe for a terminal: control characters as escapes."""
    return _UNPRINTABLE.sub(_escape_char, str(text))


def tsv_field(text: object) -> str:
    """`text` as one field of a tab-separated line: a backslash doubled, then control
    characters escaped, so ``\\n`` in a field is always a newline and ``\\\\n`` a backslash and
    an n (the escapes PostgreSQL's text COPY and linear TSV use)."""
    return printable(str(text).replace("\\", "\\\\"))


_SHOWN_ESCAPE = re.compile(r"\\(?:([ntr])|x([0-9a-f]{2})|u([0-9a-f]{4}))")
_TSV_ESCAPE = re.compile(r"\\(?:(\\)|([ntr])|x([0-9a-f]{2})|u([0-9a-f]{4}))")
_NAMED_BY_LETTER = {"n": "\n", "t": "\t", "r": "\r"}


def unprintable(shown: str) -> list[str]:
    """The names shown as `shown` (other than `shown` itself), so a path copied from a table
    (`printable`) or a TSV line (`tsv_field`, backslashes doubled) is found: ``\\n`` a newline,
    ``\\xff`` an undecodable byte or the character U+00FF, ``\\\\`` a backslash in a TSV line...
    Each candidate shows back as `shown`; a name holding a real backslash shows the same in a
    table, so callers try `shown` first."""
    if "\\" not in shown:
        return []
    found = []
    for pattern, show in ((_SHOWN_ESCAPE, printable), (_TSV_ESCAPE, tsv_field)):
        for as_bytes in (True, False):  # \x80-\xff: an undecodable byte, else that character
            candidate = pattern.sub(lambda match, as_bytes=as_bytes: _unescape(match, as_bytes), shown)
            if candidate != shown and candidate not in found and show(candidate) == shown:
                found.append(candidate)
    return found


def _unescape(match: re.Match, as_bytes: bool) -> str:
    """The character one escape of `printable` or `tsv_field` stands for."""
    *backslash, letter, byte, code = match.groups()
    if backslash and backslash[0]:
        return "\\"
    if letter:
        return _NAMED_BY_LETTER[letter]
    if byte:
        value = int(byte, 16)
        return chr(0xDC00 + value) if as_bytes and value >= 0x80 else chr(value)
    return chr(int(code, 16))


# Sequences a terminal acts on (clear the screen, retitle the window, OSC 8 links): CSI, the
# OSC/DCS/SOS/PM/APC strings up to their terminator (BEL or ST), in their 7- and 8-bit forms, and
# the short ESC sequences. Document text loses them whole on a terminal (`terminal_text`).
_TERMINAL_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)
# What `printable` escapes, less the newline and tab that lay out a document's text.
_UNPRINTABLE_IN_TEXT = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def terminal_text(text: str) -> str:
    """Document text safe for a terminal: escape sequences removed whole, any other control
    character (a lone ESC, BEL, a carriage return, C1, bidi overrides) shown as an escape;
    lines and tabs kept."""
    text = _TERMINAL_SEQUENCE.sub("", text.replace("\r\n", "\n"))
    return _UNPRINTABLE_IN_TEXT.sub(_escape_char, text)


def document_text(text: str, stream: Any = None) -> str:
    """Document text as it goes to `stream` (default stdout): neutralised on a terminal
    (`terminal_text`), exactly as stored in a pipe or a file, where it is data."""
    return terminal_text(text) if is_terminal(stream or sys.stdout) else text


# -- consoles -----------------------------------------------------------------------------
class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A reader that stopped reading (`| head -1`) is not an error: exit 0, quietly."""
        self.quiet = True
        silence_stdout()
        raise SystemExit(0)


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def no_color() -> bool:
    options = output_options()
    return options.color == "never" or (options.color == "auto" and "NO_COLOR" in os.environ)


def _console(**kwargs: Any) -> Console:
    """A console honouring --color; it never wraps or crops what does not go to a terminal."""
    stream = sys.stderr if kwargs.get("stderr") else kwargs.get("file", sys.stdout)
    color = output_options().color
    if no_color():
        kwargs.update(color_system=None, no_color=True)
    elif color == "always":
        kwargs.update(force_terminal=True, color_system="standard")
    if not is_terminal(stream):
        kwargs["soft_wrap"] = True
    return _Console(**kwargs)


def stdout_console() -> Console:
    return _console(file=sys.stdout, soft_wrap=False)


def stderr_console() -> Console:
    """Messages and progress; silent under --quiet."""
    return _console(stderr=True, quiet=output_options().quiet)


def message(text: str, style: str | None = None) -> None:
    """One plain message line on stderr (escaped, never wrapped); silent under --quiet."""
    stderr_console().print(printable(text), style=style, markup=False, highlight=False)


def warn_if_no_index(path: Path, command: str, failing: str) -> None:
    """One line on stderr at a server's start when `path` holds no index (shown even under --quiet).

    The server still starts: a running server sees what `rag ingest` writes later. A folder
    that exists and holds other files is most likely a documents folder passed as --index.

    Args:
        path: the index folder the server was given.
        command: the server's command, e.g. ``rag serve``.
        failing: what fails until there is an index, e.g. ``every tool call``.
    """
    from ragcli.store.ownership import is_index

    if is_index(path):
        return
    if path.is_dir() and any(path.iterdir()):
        why = f"{path} holds files but no index (a documents folder?)"
        fix = f"; index it with `rag ingest {path} --index INDEX`, then pass --index INDEX"
    else:
        why = f"no index at {path} yet"
        fix = f" until `rag ingest DIR --index {path}` (or pass --index PATH)"
    print(f"{command}: warning: {why}: {failing} fails{fix}", file=sys.stderr, flush=True)


# -- machine formats ----------------------------------------------------------------------
def _dumps(value: Any) -> str:
    # backslashreplace turns a lone surrogate (a non-UTF-8 file name byte) into a JSON escape.
    # An output encoding that cannot hold every character (PYTHONIOENCODING=ascii) gets JSON's
    # own \\u escapes: the stream's backslash escapes ("\\xe9") are not JSON.
    return _utf8(json.dumps(value, ensure_ascii=not _stdout_is_unicode(), default=str))


def _stdout_is_unicode() -> bool:
    import codecs

    try:
        return codecs.lookup(sys.stdout.encoding or "utf-8").name.startswith("utf")
    except LookupError:
        return False


def emit_json(kind: str, payload: dict[str, Any]) -> None:
    """One JSON document on stdout, with the schema version and what it describes."""
    sys.stdout.write(_dumps(json_document(kind, payload)) + "\n")
    sys.stdout.flush()


def emit_outcome(kind: str, payload: dict[str, Any], summary: str, *, json_output: bool) -> None:
    """What a command did: with --json one JSON document on stdout, else one summary line on
    stderr (stdout stays empty, for scripts)."""
    if json_output:
        emit_json(kind, payload)
    else:
        stderr_console().print(summary, highlight=False, markup=False)


def emit_jsonl(records: Iterable[dict[str, Any]]) -> None:
    """One JSON object per line on stdout, flushed per line for pipes."""
    for record in records:
        sys.stdout.write(_dumps(record) + "\n")
        sys.stdout.flush()


def cell(value: Any) -> str:
    """A value as text in a TSV/CSV cell or a plain line: None empty, booleans lower case."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple)):
        return _dumps(value)
    return str(value)


def emit_tsv(rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> None:
    """Tab-separated lines; backslashes, tabs, newlines and other controls inside values are
    escaped (`tsv_field`)."""
    if header is not None:
        sys.stdout.write("\t".join(header) + "\n")
    for row in rows:
        sys.stdout.write("\t".join(tsv_field(cell(value)) for value in row) + "\n")
    sys.stdout.flush()


def emit_csv(rows: Iterable[Sequence[Any]], header: Sequence[str]) -> None:
    """RFC 4180 CSV (the csv module's quoting) with a header line."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_utf8(cell(value)) for value in row])
    sys.stdout.flush()


def _utf8(text: str) -> str:
    """Text that encodes as UTF-8: a lone surrogate (non-UTF-8 file name byte) as an escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class RecordList:
    """How a list command's records print, declared once beside the command.

    Attributes:
        kind: the JSON document's kind; key: the name of its list of records.
        columns: the fields of a TSV/CSV line (`--format tsv|csv`, with a header).
        plain: a record's cells in a pipe without --format (default: the `columns`).
    """

    kind: str
    key: str
    columns: Sequence[str]
    plain: Callable[[Mapping[str, Any]], Sequence[Any]] | None = None


@dataclass(frozen=True)
class ListOutput:
    """The format a list command prints in, from its --format and --json flags."""

    format: ListFormat
    table_asked: bool = False  # `--format table`: the human table even off a terminal


def emit_records(
    output: ListOutput,
    shape: RecordList,
    records: Sequence[Mapping[str, Any]],
    *,
    human: Callable[[], None],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Print records in the chosen format.

    Args:
        output: table (human: `human()` on a terminal, else one TSV line per record without a
            header: `shape.plain(record)`, by default the `shape.columns`),
            tsv / csv (the columns with a header), json (one document: `extra` and
            `shape.key: records`) or jsonl (one record per line).
        records: the JSON shapes; the columns pick the TSV/CSV fields.
    """
    fmt, columns = output.format, shape.columns
    if fmt is ListFormat.json:
        emit_json(shape.kind, {**(extra or {}), shape.key: list(records)})
    elif fmt is ListFormat.jsonl:
        emit_jsonl(records)
    elif fmt is ListFormat.csv:
        emit_csv(([record.get(c) for c in columns] for record in records), columns)
    elif fmt is ListFormat.tsv:
        emit_tsv(([record.get(c) for c in columns] for record in records), columns)
    elif output.table_asked or is_terminal(sys.stdout):
        human()
    else:
        plain = shape.plain or (lambda record: [record.get(c) for c in columns])
        emit_tsv(plain(record) for record in records)


def resolve_format(fmt: ListFormat | None, json_flag: bool) -> ListOutput:
    """`--json` is `--format json`; asking for both JSON and another format is a usage error."""
    import typer

    if json_flag and fmt not in (None, ListFormat.json):
        raise typer.BadParameter(
            f"--json contradicts --format {fmt.value}: give one of them", param_hint="--format"
        )
    chosen = ListFormat.json if json_flag else fmt or ListFormat.table
    return ListOutput(chosen, table_asked=fmt is ListFormat.table)


def print_table(table: Any, header: bool = False) -> None:
    """A rich Table on a terminal; off one, its cells as tab-separated lines (full values)."""
    if is_terminal(sys.stdout):
        stdout_console().print(table)
        return
    if table.title:  # e.g. "scifact: 300 of 300 queries": a message, not a record
        message(str(table.title))
    columns = table.columns
    rows = zip(*(column._cells for column in columns))  # rich keeps cells per column
    emit_tsv(
        ([str(value) for value in row] for row in rows),
        [str(column.header) for column in columns] if header else None,
    )


def print_aside(text: str) -> None:
    """A line for people beside a table: under it on a terminal; off one on stderr, like the
    table's title, so stdout keeps only the tab-separated records."""
    if is_terminal(sys.stdout):
        stdout_console().print(text, highlight=False, markup=False)
    else:
        message(text)


def human_size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"
