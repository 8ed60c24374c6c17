"""`rag models`: the GGUF models ragcli can use, each with a name for `--model NAME`."""

from __future__ import annotations

from typing import Annotated

import typer

from ragcli.cli.render import emit_json, human_size, print_table


def models(
    json_output: Annotated[bool, typer.Option("--json", help="One JSON document with every model.")] = False,
) -> None:
    """List the GGUF models you already have: bundled, the [qwen] extra, config, Ollama, LM Studio,
    the Hugging Face cache and llama.cpp's cache. Nothing is downloaded or copied.

    Each NAME works as `rag ask --model NAME`; with the default `--answer-style auto`, a model of
    0.4B+ parameters writes the answer, a smaller one gets evidence-first answers.

    Example: rag models --json
    """
    from ragcli.index import open_index
    from ragcli.generation.catalog import is_capable

    entries = open_index().models()
    if json_output:
        emit_json(
            "models",
            {"models": [dict(entry.to_dict(), generative=is_capable(entry.info)) for entry in entries]},
        )
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("name", "size", "quant", "params", "context", "chat", "answers", "from"):
        table.add_column(column, no_wrap=True)
    table.add_column("path", overflow="fold")
    for entry in entries:
        info = entry.info
        table.add_row(
            entry.name,
            human_size(info.size) if info else "-",
            (info.quantisation or "-") if info else "-",
            _params(info.parameters) if info else "-",
            str(info.context_length or "-") if info else "-",
            ("yes" if info.chat_template else "no") if info else "-",
            "generative" if is_capable(info) else "evidence" if info else "-",
            entry.origin,
            str(entry.path) if entry.path else "-",
        )
    print_table(table, header=True)


def _params(count: int) -> str:
    return f"{count / 1e9:.2f}B" if count >= 1e9 else f"{count / 1e6:.0f}M"
