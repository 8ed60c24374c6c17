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
from enum import Enum
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from ragcli import __version__
from ragcli.errors import RagError

COMPLETE_VAR = "_RAG_COMPLETE"

# Command name -> (module, attribute): a command function, or a typer app for a group.
# Listed in the order `rag --help` shows them.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("ragcli.cli.ingest", "ingest"),
    "status": ("ragcli.cli.ingest", "status"),
    "ls": ("ragcli.cli.ingest", "ls"),
    "rm": ("ragcli.cli.ingest", "rm"),
    "config": ("ragcli.cli.config", "app"),
    "doctor": ("ragcli.cli.doctor", "doctor"),
    "completions": ("ragcli.cli.completions", "completions"),
    "query": ("ragcli.cli.query", "query"),
    "ask": ("ragcli.cli.ask", "ask"),
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
    return command


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


_GLOBAL_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose"})


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
            moved.extend(args[index:index + 2])
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
            _silence_stdout()
            raise typer.Exit(0) from None


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


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
    color: Annotated[Optional[Color], typer.Option(
        help="Colour: auto (terminal only, honours NO_COLOR), always or never. Default: $RAG_COLOR or auto.",
        show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only data and errors: no messages.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens to stderr.")] = False,
) -> None:
    """Local-first retrieval-augmented generation: ingest folders, query them, ask them.

    Example: rag ingest ~/notes && rag query "how do I reset the router?"
    """
    import logging

    from ragcli.cli.render import OutputOptions

    chosen = color.value if color else os.environ.get("RAG_COLOR", "auto")
    ctx.obj = OutputOptions(color=chosen, quiet=quiet, verbose=verbose)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr,
                        format="rag: %(name)s: %(message)s")
    # Parser libraries (pypdf) log recoverable oddities; the per-file report already says
    # what matters, so keep their warnings off the terminal unless asked for.
    logging.getLogger("pypdf").setLevel(logging.INFO if verbose else logging.ERROR)



def main() -> None:
    """Entry point. A closed pipe (`rag ls | head -1`) ends quietly with exit 0."""
    if COMPLETE_VAR in os.environ:
        from ragcli.cli.completions import enable

        enable()
    try:
        app(prog_name="rag", complete_var=COMPLETE_VAR)
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
