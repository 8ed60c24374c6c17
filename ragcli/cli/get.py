"""`rag get` (print a stored document, page or chunk) and `rag open` (show a cited file)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ragcli.cli.options import GroupOption, IndexOption
from ragcli.cli.render import document_text, emit_json, message, stderr_console, unprintable

TargetArgument = Annotated[
    Optional[str],
    typer.Argument(
        metavar="PATH[:PAGE]",
        help="An indexed file as `rag ls` or a query hit shows it (absolute, or relative "
        "to this folder), optionally with :PAGE.",
        show_default=False,
    ),
]
ChunkOption = Annotated[
    Optional[int],
    typer.Option(
        "--chunk", "-c", help="A chunk id, as in the chunk_id of `rag query --json` hits.", show_default=False
    ),
]


def get(
    target: TargetArgument = None,
    chunk: ChunkOption = None,
    group: GroupOption = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON document: kind, path, page, pages, group, chunk ids, text, metadata.",
        ),
    ] = False,
    index: IndexOption = None,
) -> None:
    """Print a stored document, one page of it, or one chunk: what a query hit points to.

    The text is the one the index holds (rebuilt from its chunks), not the file as it is now.

    Examples:

        rag get ~/papers/lighthouses.pdf:2

        rag get --chunk 1234 --json | jq .metadata

        rag query "router reset" --json | jq '.hits[0].chunk_id' | xargs rag get --chunk
    """
    stored = _lookup(target, chunk, group, index)
    if json_output:
        emit_json("get", stored.to_dict())
        return
    if not stored.text:  # an empty file is indexed, but an empty line would read as content
        message(f"{stored.path} is empty: no text was read from it")
        return
    text = document_text(stored.text)  # escape sequences neutralised on a terminal only
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def open_(
    target: TargetArgument = None,
    chunk: ChunkOption = None,
    index: IndexOption = None,
) -> None:
    """Open a cited file at its page in your viewer; print its path where nothing can open it.

    PDFs open at the page with zathura, evince, okular or mupdf when one is installed, other
    files with xdg-open (macOS: open). Without a display (ssh, containers) the path, with
    :PAGE, is printed on stdout instead.

    Examples:

        rag open ~/papers/lighthouses.pdf:2

        rag open --chunk 1234
    """
    from ragcli.cli.opener import file_to_open, open_in_viewer
    from ragcli.places import location

    stored = _lookup(target, chunk, None, index)
    page = stored.page if stored.kind in ("page", "chunk") else None
    on_disk, opened, part = file_to_open(stored.path)  # the file's own (non-UTF-8) name; a part's file
    command = open_in_viewer(on_disk, page)
    if command is None:
        sys.stdout.write(location(stored.path, page) + "\n")
        sys.stdout.flush()
        return
    stderr_console().print(
        f"opened with {command[0]}: {opened}"
        + (f" (page {page})" if page else "")
        + (f" (#{part} is inside it)" if part else ""),
        markup=False,
        highlight=False,
    )


def _lookup(target: Optional[str], chunk: Optional[int], group: Optional[str], index):
    """The stored text `target` or `chunk` names; a path as a table or TSV line shows it
    (control characters escaped, e.g. ``\\n``) is found too, when no path is literally so."""
    from ragcli.index import open_index
    from ragcli.retrieval.documents import NotFound

    if (target is None) == (chunk is None):
        raise typer.BadParameter("give PATH[:PAGE] or --chunk ID (one of them)", param_hint="PATH[:PAGE]")
    opened = open_index(index, group=group)
    if target is None:
        return opened.get(None, chunk=chunk)
    try:
        return opened.get(target)
    except NotFound:
        for candidate in unprintable(target):
            try:
                return opened.get(candidate)
            except NotFound:
                continue
        raise
