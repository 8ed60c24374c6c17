"""`rag.1`: a man page generated from the app itself (click introspection), like --help.

Run `python -m ragcli.cli.manpage > man/rag.1`; a test checks the committed copy is current.
One page covers every command (as git's summary page does), so `man rag` and a search for
an option both land in one place. No date in the header, so the output is reproducible.
"""

from __future__ import annotations

import re

from ragcli import __version__

EXIT_STATUS = (
    ("0", "success (also when a reader closes the pipe early, e.g. `| head -1`)"),
    ("1", "runtime error: no index, a failed check (`rag doctor`), a model that cannot load"),
    ("2", "usage error: an unknown option, a bad value, contradictory flags"),
    ("130", "interrupted (Ctrl-C); committed work is kept"),
)


def roff(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote on a line."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.MULTILINE)


def _paragraphs(help_text: str | None) -> list[str]:
    from ragcli.cli import reflow_help

    return [p for p in (reflow_help(help_text) or "").split("\n\n") if p.strip()]


def _describe(help_text: str | None) -> list[str]:
    lines: list[str] = []
    for paragraph in _paragraphs(help_text):
        if paragraph.startswith(" "):  # examples: verbatim
            lines += [
                ".PP",
                ".nf",
                ".RS 4",
                roff("\n".join(line.strip() for line in paragraph.splitlines())),
                ".RE",
                ".fi",
            ]
        else:
            lines += [".PP", roff(paragraph)]
    return lines


def _options(command, ctx) -> list[str]:
    lines: list[str] = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, text = record
        lines += [".TP", f"\\fB{roff(names)}\\fR", roff(text or "")]
    return lines


def _commands(group, ctx, prefix: str) -> list[str]:
    import typer._click as click

    lines: list[str] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub_ctx = click.Context(command, info_name=name, parent=ctx)
        path = f"{prefix} {name}"
        if hasattr(command, "list_commands"):
            lines += _commands(command, sub_ctx, path)
            continue
        usage = " ".join(command.collect_usage_pieces(sub_ctx))
        lines += [
            f'.SS "{roff(path)}"',
            f".B {roff(path)} {roff(usage)}",
            *_describe(command.help),
            *_options(command, sub_ctx),
        ]
    return lines


def render() -> str:
    """The whole page as roff text."""
    import typer
    import typer._click as click

    from ragcli.cli import app
    from ragcli.config import KEYS

    root = typer.main.get_command(app)
    ctx = click.Context(root, info_name="rag")
    summary = _paragraphs(root.help)[0]
    lines = [
        f'.TH RAG 1 "" "rag {__version__}" "User Commands"',
        ".SH NAME",
        f"rag \\- {roff(summary[0].lower() + summary[1:].rstrip('.'))}",
        ".SH SYNOPSIS",
        ".B rag",
        "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        *_describe(root.help),
        ".SH GLOBAL OPTIONS",
        ".PP",
        "They may also be given after the command name.",
        *_options(root, ctx),
        ".SH COMMANDS",
        *_commands(root, ctx, "rag"),
        ".SH OUTPUT",
        ".PP",
        roff(
            "Data goes to stdout, messages to stderr. Off a terminal nothing wraps, and commands "
            "that list records print one tab-separated line per record (no header); --format "
            "tsv|csv add a header, --format json|jsonl print the shapes documented in docs/json.md. "
            "Control characters in names are shown escaped (\\x1b) in human output."
        ),
        ".SH ENVIRONMENT",
    ]
    for name, key in KEYS.items():
        lines += [".TP", f"\\fB{key.env}\\fR", roff(f"{key.help} (setting {name})")]
    lines += [".TP", "\\fBNO_COLOR\\fR", "no colour or other escape sequences (as \\-\\-color never)"]
    lines += [".SH EXIT STATUS"]
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", roff(meaning)]
    lines += [
        ".SH SEE ALSO",
        "Shell completions: \\fBrag completions bash|zsh|fish\\fR; the README's Shell section.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
