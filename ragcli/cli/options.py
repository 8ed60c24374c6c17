"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

IndexOption = Annotated[
    Optional[Path],
    typer.Option("--index", help="Index directory (default: $RAG_INDEX, else the user data dir).",
                 show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
EmbedModelOption = Annotated[
    Optional[str],
    typer.Option("--embed-model", help="Embedding model: a local sentence-transformers folder "
                 "(default: $RAG_EMBED_MODEL, else the packaged all-MiniLM-L6-v2).", show_default=False),
]
def _complete_groups(incomplete: str) -> list[str]:
    from ragcli.cli.completions import group_names

    return group_names(incomplete)


GroupOption = Annotated[
    Optional[str],
    typer.Option("--group", "-g", help="Chunk group (granularity), e.g. fine, medium, coarse.",
                 show_default=False, autocompletion=_complete_groups),
]
