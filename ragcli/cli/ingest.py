"""`rag ingest`, `rag status`, `rag ls`, `rag rm`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragcli.cli.options import EmbedModelOption, GroupOption, IndexOption, JsonOption
from ragcli.cli.progress import progress_bar
from ragcli.cli.render import emit_json, human_size, stderr_console, stdout_console
from ragcli.config import load_settings


class SplitBy(str, Enum):
    page = "page"
    passage = "passage"
    sentence = "sentence"
    word = "word"
    token = "token"


LockTimeoutOption = Annotated[float, typer.Option(
    min=0, help="Seconds to wait while another rag process writes the same index, then give up "
    "(exit 1).")]


def ingest(
    paths: Annotated[Optional[List[Path]], typer.Argument(
        help="Folders (walked recursively) and files; default: the roots ingested before.",
        show_default=False)] = None,
    index: IndexOption = None,
    group: GroupOption = None,
    split_by: Annotated[Optional[SplitBy], typer.Option(help="Unit of the windows.", show_default=False)] = None,
    chunk_size: Annotated[Optional[int], typer.Option(help="Units per window.", show_default=False)] = None,
    chunk_overlap: Annotated[Optional[int], typer.Option(help="Units shared by neighbouring windows.",
                                                         show_default=False)] = None,
    include: Annotated[Optional[List[str]], typer.Option(help="Only files matching this glob (repeatable).",
                                                         show_default=False)] = None,
    exclude: Annotated[Optional[List[str]], typer.Option(help="Skip files matching this glob (repeatable).",
                                                         show_default=False)] = None,
    prune: Annotated[bool, typer.Option(help="Remove indexed documents whose files are gone from the "
                                        "given folders (on by default).")] = True,
    rebuild: Annotated[bool, typer.Option(help="Build a fresh index (e.g. for another model) and swap it "
                                          "in when complete.")] = False,
    embed_model: EmbedModelOption = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Chunks embedded and committed per transaction "
                                            "(smaller: less memory, finer resume points).")] = 256,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any file failed to read (default: report "
                                         "failures, exit 0).")] = False,
    lock_timeout: LockTimeoutOption = 600.0,
    json_output: JsonOption = False,
) -> None:
    """Read folders of documents into the index; re-running only touches what changed.

    Reads txt, md, pdf, docx and html; skips hidden and binary files. Unreadable files are
    reported one per line and the rest is ingested. Only one process writes an index at a
    time: a second one waits (saying so) up to --lock-timeout seconds.

    Example: rag ingest ~/notes ~/papers --include '*.pdf' --group fine
    """
    from ragcli.ingest import DEFAULT_GROUP, chunking_override, ingest as run_ingest, known_roots
    from ragcli.models import embedder_for
    from ragcli.store import read_index_meta
    from ragcli.walk import FileFilter

    settings = load_settings(index=index, embed_model=embed_model)
    group = group or DEFAULT_GROUP
    roots = paths or known_roots(settings.index)
    chunking = chunking_override(settings.index, group, split_by.value if split_by else None,
                                 chunk_size, chunk_overlap)
    err = stderr_console()
    embedder = embedder_for(settings, None if rebuild else read_index_meta(settings.index, "embedding_model"))
    with progress_bar(err, "ingesting") as bar:
        report = run_ingest(settings.index, roots, embedder=embedder, group=group, chunking=chunking,
                            file_filter=FileFilter(tuple(include or ()), tuple(exclude or ())),
                            prune=prune, rebuild=rebuild, batch_chunks=batch_size, progress=bar,
                            lock_timeout=lock_timeout, on_wait=_say_waiting)
    for failure in report.failed:
        message = failure.reason if failure.path in failure.reason else f"{failure.path}: {failure.reason}"
        err.print(f"[red]failed[/red] {escape(message)}", highlight=False)
    if json_output:
        emit_json("ingest", report.to_dict())
    else:
        err.print(
            f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
            f"{report.removed} removed, {len(report.failed)} failed; {report.chunks} chunks written, "
            f"{report.embedded} embedded, {report.vectors} vectors in group '{report.group}'; "
            f"{report.seconds:.1f} s", highlight=False)
    if strict and report.failed:
        raise typer.Exit(1)


def _say_waiting(message: str) -> None:
    stderr_console().print(message, highlight=False, markup=False)


def status(index: IndexOption = None, json_output: JsonOption = False) -> None:
    """Show what the index holds: documents, chunks, groups, model, sizes, last ingest.

    Example: rag status --json | jq .documents
    """
    from ragcli.status import index_status

    info = index_status(load_settings(index=index).index)
    if json_output:
        emit_json("status", info)
        return
    out = stdout_console()
    out.print(f"index      {info['index']}", highlight=False)
    out.print(f"documents  {info['documents']}    chunks {info['chunks']}    vectors {info['embeddings']}")
    out.print(f"model      {info['model']} (dimension {info['dimension']})", highlight=False)
    out.print(f"size       database {human_size(info['sizes']['database'])}, "
              f"vectors {human_size(info['sizes']['vectors'])}")
    table = Table("group", "split", "size", "overlap", "chunks", "vectors")
    for name, g in info["groups"].items():
        table.add_row(name, g["split_by"], str(g["chunk_size"]), str(g["chunk_overlap"]), str(g["chunks"]),
                      str(g["vectors"]) + ("" if g["vectors_current"] else " (stale)"))
    out.print(table)
    last = info["last_ingest"]
    if last:
        out.print(f"last ingest: {last['added']} added, {last['updated']} updated, {last['removed']} removed, "
                  f"{last['failed']} failed in {last['seconds']} s", highlight=False)


def ls(index: IndexOption = None, json_output: JsonOption = False) -> None:
    """List indexed documents with their chunk counts per group.

    Example: rag ls --json | jq -r '.documents[].path'
    """
    from ragcli.status import list_documents

    documents = list_documents(load_settings(index=index).index)
    if json_output:
        emit_json("documents", {"documents": documents})
        return
    table = Table("type", "size", "chunks", "modified")
    table.add_column("path", overflow="fold")
    for doc in documents:
        chunks = ", ".join(f"{g}:{n}" for g, n in doc["chunks"].items())
        table.add_row(doc["file_type"], human_size(doc["size"] or 0), chunks, (doc["modified"] or "")[:10],
                      doc["path"])
    stdout_console().print(table)


def _complete_paths(incomplete: str) -> list[str]:
    from ragcli.cli.completions import indexed_paths

    return indexed_paths(incomplete)


def rm(
    paths: Annotated[List[str], typer.Argument(help="Indexed files or folders to remove.",
                                              autocompletion=_complete_paths)],
    index: IndexOption = None,
    lock_timeout: LockTimeoutOption = 600.0,
    json_output: JsonOption = False,
) -> None:
    """Remove documents (a folder removes everything indexed under it) from the index.

    Example: rag rm ~/notes/old-draft.md
    """
    from ragcli.ingest import remove_paths

    removed = remove_paths(load_settings(index=index).index, paths, lock_timeout=lock_timeout,
                           on_wait=_say_waiting)
    if json_output:
        emit_json("rm", {"removed": removed})
    else:
        stderr_console().print(f"{removed} document(s) removed")
