"""The `rag` command: a thin typer layer over the library, with one error boundary.

The boundary lives in the click group (`_RagGroup.invoke`), so it applies the same way to
the installed entry point and to in-process `CliRunner` tests: a `RagError` becomes one
line on stderr and its exit code (1, or 2 for bad values), Ctrl-C exits 130.

Commands load lazily (`LazyCommands`): `rag query` imports the query module only, not
`rag eval`'s or `rag ask`'s, which keeps a cold query's start-up short.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from ragcli import __version__
from ragcli.choices import COLORS
from ragcli.cli.completions import COMPLETE_VAR
from ragcli.cli.options import choice_enum
from ragcli.errors import RagError

# Command name -> (module, attribute): a command function, or a typer app for a group.
# Listed in the order `rag --help` shows them.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("ragcli.cli.ingest", "ingest"),
    "embed": ("ragcli.cli.embed", "embed"),
    "status": ("ragcli.cli.ingest", "status"),
    "ls": ("ragcli.cli.ingest", "ls"),
    "rm": ("ragcli.cli.ingest", "rm"),
    "config": ("ragcli.cli.config", "app"),
    "doctor": ("ragcli.cli.doctor", "doctor"),
    "completions": ("ragcli.cli.completions", "completions"),
    "query": ("ragcli.cli.query", "query"),
    "ask": ("ragcli.cli.ask", "ask"),
    "get": ("ragcli.cli.get", "get"),
    "open": ("ragcli.cli.get", "open_"),
    "mcp": ("ragcli.cli.mcp", "mcp"),
    "serve": ("ragcli.cli.serve", "serve"),
    "eval": ("ragcli.cli.eval", "app"),
    "models": ("ragcli.cli.models", "models"),
}


def load_command(name: str) -> typer.main.TyperCommand | typer.core.TyperGroup:
    """Import a command's module and build its click command."""
    module_name, attribute = COMMANDS[name]
    target = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(target, typer.Typer):
        single = typer.Typer(add_completion=False)
        single.command(name)(target)
        target = single
    command = typer.main.get_command(target)
    command.name = name
    reflow_command_help(command)
    return command


def reflow_help(text: str | None) -> str | None:
    """Docstring line breaks out of help prose: each prose paragraph becomes one line.

    Indented paragraphs (examples) are kept line by line, so a command is never split.
    The help renderer then wraps prose at the terminal's width, and not at all in a pipe.
    """
    if not text:
        return text
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith((" ", "\b")) else " ".join(p.split("\n")) for p in paragraphs)


def reflow_command_help(command) -> None:
    """Reflow the help of a command, its options and (for a group) its subcommands."""
    command.help = reflow_help(command.help)
    for param in getattr(command, "params", []):
        if getattr(param, "help", None):
            param.help = reflow_help(param.help)
    for sub in getattr(command, "commands", {}).values():
        reflow_command_help(sub)


class LazyCommands(MutableMapping):
    """The group's commands: names known up front, each built on first lookup."""

    def __init__(self) -> None:
        self._loaded: dict[str, object] = {}

    def __getitem__(self, name: str):
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self._loaded[name] = load_command(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("rag's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._loaded]))

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self._loaded))


_GLOBAL_FLAGS = frozenset({"-q", "--quiet", "-v", "-vv", "-vvv", "--verbose"})


def hoist_global_options(args: list[str]) -> list[str]:
    """Move --color/-q/-v given after a command name to the front, so they work everywhere."""
    moved: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index:])
            break
        if arg in _GLOBAL_FLAGS or arg.startswith("--color="):
            moved.append(arg)
        elif arg == "--color" and index + 1 < len(args):
            moved.extend(args[index : index + 2])
            index += 1
        else:
            rest.append(arg)
        index += 1
    return moved + rest


class _RagGroup(TyperGroup):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands()

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, hoist_global_options(list(args)))

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RagError as error:
            typer.echo(f"rag: error: {error}", err=True)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("rag: interrupted", err=True)
            raise typer.Exit(130) from None
        except BrokenPipeError:
            silence_stdout()
            raise typer.Exit(0) from None
        except Exception as error:  # storage failures (disk full, damaged index) that escaped
            from ragcli.store.errors import as_rag_error

            translated = as_rag_error(error)
            if translated is None:
                raise
            typer.echo(f"rag: error: {translated}", err=True)
            raise typer.Exit(translated.exit_code) from None


app = typer.Typer(
    name="rag",
    cls=_RagGroup,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rag {__version__}")
        raise typer.Exit()


Color = choice_enum("Color", COLORS)


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
    color: Annotated[
        Optional[Color],
        typer.Option(
            help="Colour: auto (terminal only, honours NO_COLOR), always or never. "
            "Default: $RAG_COLOR or auto.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only data and errors: no messages.")] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            show_default=False,
            help="Say on stderr what rag does: index, model, mode, time per stage. -vv adds library logs.",
        ),
    ] = 0,
) -> None:
    """Local-first retrieval-augmented generation: ingest folders, query them, ask them.

    Example: rag ingest ~/notes && rag query "how do I reset the router?"
    """
    from ragcli.cli.render import OutputOptions
    from ragcli.cli.verbose import configure_logging

    chosen = color.value if color else os.environ.get("RAG_COLOR", "auto")
    ctx.obj = OutputOptions(color=chosen, quiet=quiet, verbose=verbose)
    configure_logging(verbose)


def main() -> None:
    """Entry point. A closed pipe (`rag ls | head -1`) ends quietly with exit 0."""
    if COMPLETE_VAR in os.environ:
        from ragcli.cli.completions import enable

        enable()
    _plain_help_and_errors_off_a_terminal()
    _forgiving_streams()
    try:
        app(prog_name="rag", complete_var=COMPLETE_VAR)
    except BrokenPipeError:
        silence_stdout()
        sys.exit(0)
    except SystemExit:
        # click met the closed pipe itself (e.g. printing --help): it wraps stdout in
        # PacifyFlushWrapper and exits 1; a reader that stopped reading is not an error.
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":
            silence_stdout()
            sys.exit(0)
        raise
    finally:
        try:  # a reader that closed the pipe must not turn the final flush into exit 1
            sys.stdout.flush()
        except BrokenPipeError:
            silence_stdout()


def _forgiving_streams() -> None:
    """Bytes that are not text in the stream's encoding end neither a pipe nor the command.

    Python reads and writes stdio strictly under most locales (`en_US.UTF-8`, or
    `PYTHONIOENCODING=ascii`): one Latin-1 line on stdin, or an answer's "…" on an ASCII
    terminal, raised a traceback. Stdin keeps such bytes as surrogates (searched and shown as
    U+FFFD, echoed as the byte it was, like a non-UTF-8 file name); stdout and stderr write
    what their encoding cannot hold as a backslash escape.
    """
    for stream, forgiving in (
        (sys.stdin, "surrogateescape"),
        (sys.stdout, "backslashreplace"),
        (sys.stderr, "backslashreplace"),
    ):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=forgiving)


def _plain_help_and_errors_off_a_terminal() -> None:
    """Typer draws help and usage errors in rich boxes 80 columns wide; in a pipe or a file
    that splits sentences and paths. Off a terminal, click's plain output is used instead
    (usage errors stay on one line)."""
    import typer.core

    if not (sys.stdout.isatty() and sys.stderr.isatty()):
        typer.core.HAS_RICH = False
        # click wraps help at 80 columns; in a pipe a line is as long as its paragraph.
        app.info.context_settings.update(max_content_width=1_000_000, terminal_width=1_000_000)


def silence_stdout() -> None:
    from ragcli.cli.render import silence_stdout as silence

    silence()
