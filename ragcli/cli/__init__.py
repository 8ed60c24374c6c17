"""The `rag` command: a thin typer layer over the library, with one error boundary."""

from __future__ import annotations

import sys

import typer

from ragcli import __version__
from ragcli.cli import ingest as ingest_commands

app = typer.Typer(
    name="rag",
    help="Local-first retrieval-augmented generation: ingest folders, query them, ask them.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rag {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
) -> None:
    """Local-first retrieval-augmented generation: ingest folders, query them, ask them.

    Example: rag ingest ~/notes && rag query "how do I reset the router?"
    """


app.command("ingest")(ingest_commands.ingest)
app.command("status")(ingest_commands.status)
app.command("ls")(ingest_commands.ls)
app.command("rm")(ingest_commands.rm)


def main() -> None:
    """Entry point: run the app; map library errors to one line on stderr and an exit code."""
    from ragcli.errors import RagError

    try:
        app(standalone_mode=False)
    except RagError as error:
        typer.echo(f"rag: error: {error}", err=True)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        typer.echo("rag: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except (typer.Exit, SystemExit) as done:
        sys.exit(getattr(done, "exit_code", getattr(done, "code", 0)))
    except Exception as error:  # click usage errors and aborts
        _click_error(error)


def _click_error(error: Exception) -> None:
    import click

    if isinstance(error, click.exceptions.ClickException):
        error.show()
        sys.exit(error.exit_code)
    if isinstance(error, click.exceptions.Abort):
        typer.echo("rag: interrupted", err=True)
        sys.exit(130)
    raise error


def _quiet_broken_pipe() -> None:
    """The reader went away (`rag ls | head -1`): stop quietly with exit 0."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)
