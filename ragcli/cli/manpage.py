"""`rag.1`: a man page generated from the app itself (click introspection), like --help.

Run `python -m ragcli.cli.manpage > man/rag.1`; a test checks the committed copy is current.
It reads the same sources as the Markdown reference (`ragcli.cli.reference`).
One page covers every command (as git's summary page does), so `man rag` and a search for
an option both land in one place. No date in the header, so the output is reproducible.
"""

from __future__ import annotations

import re

from ragcli import __version__
from ragcli.cli.reference import (
    ENVIRONMENT,
    EXIT_STATUS,
    leaf_commands,
    option_records,
    paragraphs,
    root_command,
)


def roff(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote on a line."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text, flags=re.MULTILINE)


def _describe(help_text: str | None) -> list[str]:
    lines: list[str] = []
    for paragraph in paragraphs(help_text):
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
    for names, text in option_records(command, ctx):
        lines += [".TP", f"\\fB{roff(names)}\\fR", roff(text)]
    return lines


def _commands(group, ctx) -> list[str]:
    lines: list[str] = []
    for path, command, sub_ctx in leaf_commands(group, ctx):
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
    from ragcli.config import KEYS

    root, ctx = root_command()
    summary = paragraphs(root.help)[0]
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
        *_commands(root, ctx),
        ".SH OUTPUT",
        ".PP",
        roff(
            "Data goes to stdout, messages to stderr. Off a terminal nothing wraps, and commands "
            "that list records print one tab-separated line per record (no header); --format "
            "tsv|csv add a header, --format json|jsonl print the shapes documented in "
            "docs/reference/json.md. "
            "Control characters in names are shown escaped (\\x1b) in human output."
        ),
        ".SH ENVIRONMENT",
    ]
    for name, key in KEYS.items():
        lines += [".TP", f"\\fB{key.env}\\fR", roff(f"{key.help} (setting {name})")]
    for name, what in ENVIRONMENT:
        lines += [".TP", f"\\fB{name}\\fR", roff(what.replace("`", ""))]
    lines += [".SH EXIT STATUS"]
    for code, meaning, _ in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", roff(meaning.replace("`", ""))]
    lines += [
        ".SH SEE ALSO",
        "Shell completions: \\fBrag completions bash|zsh|fish\\fR. Guides, the command reference "
        "and the JSON shapes: docs/README.md in ragcli's source tree.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
