"""`rag doctor`."""

from __future__ import annotations

import typer
from rich.markup import escape

from ragcli.cli.options import EmbedModelOption, FormatOption, IndexOption, JsonFormatOption
from ragcli.cli.render import RecordList, emit_records, printable, resolve_format, stdout_console

CHECKS_LIST = RecordList(
    "doctor",
    "checks",
    ("name", "ok", "detail", "fix"),
    plain=lambda r: ["ok" if r["ok"] else "FAIL", r["name"], r["detail"], r["fix"]],
)


def doctor(
    index: IndexOption = None,
    embed_model: EmbedModelOption = None,
    json_output: JsonFormatOption = False,
    output_format: FormatOption = None,
) -> None:
    """Check models, llama.cpp, the index, its integrity, vectors and disk; say how to fix each failure.

    Exit code 0 when every check passes, 1 otherwise. In a pipe each check is one
    tab-separated line: ok or FAIL, name, detail, fix.

    Example: rag doctor --json | jq '.checks[] | select(.ok | not)'
    """
    from ragcli.index import open_index

    output = resolve_format(output_format, json_output)
    checks = open_index(index, embed_model=embed_model).diagnose()
    healthy = all(check.ok for check in checks)
    records = [check.to_dict() for check in checks]
    emit_records(output, CHECKS_LIST, records, extra={"ok": healthy}, human=lambda: _print_checks(checks))
    if not healthy:
        raise typer.Exit(1)


def _print_checks(checks) -> None:
    out = stdout_console()
    for check in checks:
        mark = "[green]ok[/green]  " if check.ok else "[red]FAIL[/red]"
        name, detail = escape(printable(check.name)), escape(printable(check.detail))
        out.print(f"{mark} {name}: {detail}", highlight=False)
        if not check.ok:
            out.print(f"      fix: {escape(printable(check.fix))}", highlight=False)
