"""`rag embed`: add the vectors an ingest left for later (`rag ingest --defer-embedding`)."""

from __future__ import annotations

from typing import Annotated

import typer

from ragcli.cli.ingest import LockTimeoutOption, _say_waiting
from ragcli.cli.options import EmbedModelOption, IndexOption, JsonOption
from ragcli.cli.progress import progress_bar
from ragcli.cli.render import emit_outcome, stderr_console


def embed(
    index: IndexOption = None,
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Detach: embed in a process of its own, output in embed.log and its pid in embed.pid "
            "in the index folder (`rag status` shows it).",
        ),
    ] = False,
    embed_model: EmbedModelOption = None,
    lock_timeout: LockTimeoutOption = 600.0,
    json_output: JsonOption = False,
) -> None:
    """Embed every chunk still without a vector, batch by batch; a kill keeps what was done.

    BM25 finds chunks as soon as they are ingested; dense and hybrid search cover them once
    they are embedded (until then they rank by BM25 alone, and queries say how much is covered).

    Example: rag ingest ~/papers --defer-embedding && rag embed --background && rag status
    """
    from ragcli.index import open_index

    index_ = open_index(index, embed_model=embed_model)
    err = stderr_console()
    if background:
        job = index_.embed_in_background(lock_timeout=lock_timeout)
        summary = f"embedding in the background: pid {job['pid']}, log {job['log']}"
        emit_outcome("embed", {"background": job}, summary, json_output=json_output)
        return
    try:
        with progress_bar(err, "embedding", unit="chunks") as bar:
            report = index_.embed(progress=bar, lock_timeout=lock_timeout, on_wait=_say_waiting)
    finally:
        from ragcli.ingest.background import forget_own_job

        forget_own_job(index_.path)
    summary = (
        f"{report.chunks} chunks given a vector ({report.embedded} embedded), "
        f"{report.remaining} left; {report.seconds:.1f} s"
    )
    emit_outcome("embed", report.to_dict(), summary, json_output=json_output)
