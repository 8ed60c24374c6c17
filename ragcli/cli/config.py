"""`rag config path|show|get|set|unset`: the configuration file and where each value comes from."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from ragcli.cli.options import FormatOption, JsonFormatOption, JsonOption
from ragcli.cli.render import (
    RecordList,
    emit_json,
    emit_records,
    printable,
    resolve_format,
    stderr_console,
    stdout_console,
)
from ragcli.choices import ASK_TOP_K
from ragcli.config import (
    KEYS,
    default_config_path,
    load_settings,
    set_config_value,
    shown_value,
    unset_config_value,
)

app = typer.Typer(
    help="Show and change settings (flag > environment > config file > index > default).",
    add_completion=False,
    no_args_is_help=True,
)


@app.command("path")
def path() -> None:
    """Print the config file's path (it need not exist yet).

    Example: $EDITOR "$(rag config path)"
    """
    typer.echo(str(default_config_path()))


SETTINGS_LIST = RecordList("config", "settings", ("key", "value", "source", "env"))


@app.command("show")
def show(json_output: JsonFormatOption = False, output_format: FormatOption = None) -> None:
    """Show every setting, its value and where it came from (flag, env, config file, default).

    In a pipe each setting is one tab-separated line: key, value, source, environment variable.

    Example: RAG_TOP_K=5 rag config show
    """
    output = resolve_format(output_format, json_output)
    settings = load_settings()
    rows = [
        {
            "key": name,
            "value": shown_value(name, settings.get(name)),
            "source": settings.sources[name],
            "env": key.env,
            "help": key.help,
        }
        for name, key in KEYS.items()
    ]
    emit_records(
        output,
        SETTINGS_LIST,
        rows,
        extra={"path": str(default_config_path())},
        human=lambda: _print_settings(rows),
    )


def _print_settings(rows: list[dict]) -> None:
    from rich.text import Text

    table = Table("key", "value", "source", "environment")
    for row in rows:
        value = row["value"] or "-"
        if row["key"] == "top_k" and row["source"] == "default":  # one setting, two defaults
            value = f"{value} (rag ask: {ASK_TOP_K})"
        table.add_row(row["key"], Text(printable(value)), row["source"], row["env"])
    stdout_console().print(table)


def _complete_keys(incomplete: str) -> list[str]:
    from ragcli.cli.completions import config_keys

    return config_keys(incomplete)


@app.command("get")
def get_value(
    key: Annotated[str, typer.Argument(help=f"One of: {', '.join(KEYS)}.", autocompletion=_complete_keys)],
    json_output: JsonOption = False,
) -> None:
    """Print one setting's value as it applies now (environment > config file > default).

    The value alone on a line, for `$(...)`; nothing when the setting has none (it is decided
    where it is used, e.g. the index's own model). A secret shows as (hidden). --json adds
    where the value came from.

    Example: rag config get top_k
    """
    settings = load_settings()
    if key not in KEYS:
        from ragcli.errors import UsageError

        raise UsageError(f"unknown setting '{key}' (known: {', '.join(KEYS)})")
    value = shown_value(key, settings.get(key))
    if json_output:
        emit_json("setting", {"key": key, "value": value, "source": settings.sources[key]})
    elif value is not None:
        typer.echo(value)


@app.command("set")
def set_value(
    key: Annotated[str, typer.Argument(help=f"One of: {', '.join(KEYS)}.", autocompletion=_complete_keys)],
    value: Annotated[str, typer.Argument(help="The new value.")],
) -> None:
    """Write one setting into the config file.

    Example: rag config set top_k 5
    """
    parsed = set_config_value(default_config_path(), key, value)
    shown = shown_value(key, parsed)
    stderr_console().print(f"{key} = {shown} written to {default_config_path()}", highlight=False)


@app.command("unset")
def unset_value(
    key: Annotated[str, typer.Argument(help=f"One of: {', '.join(KEYS)}.", autocompletion=_complete_keys)],
) -> None:
    """Remove one setting from the config file, so the environment or the default applies again.

    Example: rag config unset top_k
    """
    path = default_config_path()
    removed = unset_config_value(path, key)
    said = f"{key} removed from {path}" if removed else f"{key} was not set in {path}: nothing to do"
    stderr_console().print(said, highlight=False, markup=False)
