"""`rag doctor`."""

from __future__ import annotations

import typer
from rich.markup import escape

from ragcli.cli.options import EmbedModelOption, IndexOption, JsonOption
from ragcli.cli.render import emit_json, stdout_console
from ragcli.config import load_settings


def doctor(index: IndexOption = None, embed_model: EmbedModelOption = None, json_output: JsonOption = False) -> None:
    """Check models, llama.cpp, the index, its integrity, vectors and disk; say how to fix each failure.

    Exit code 0 when every check passes, 1 otherwise.

    Example: rag doctor --json | jq '.checks[] | select(.ok | not)'
    """
    from ragcli.doctor import diagnose

    checks = diagnose(load_settings(index=index, embed_model=embed_model))
    healthy = all(check.ok for check in checks)
    if json_output:
        emit_json("doctor", {"ok": healthy, "checks": [check.to_dict() for check in checks]})
    else:
        out = stdout_console()
        for check in checks:
            mark = "[green]ok[/green]  " if check.ok else "[red]FAIL[/red]"
            out.print(f"{mark} {escape(check.name)}: {escape(check.detail)}", highlight=False)
            if not check.ok:
                out.print(f"      fix: {escape(check.fix)}", highlight=False)
    if not healthy:
        raise typer.Exit(1)
