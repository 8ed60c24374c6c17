"""`rag ingest`, `rag status`, `rag ls`, `rag rm`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragcli.choices import SPLIT_BY
from ragcli.cli.options import (
    EmbedModelOption,
    EmbedRuntimeOption,
    FormatOption,
    GroupOption,
    IndexOption,
    JsonFormatOption,
    JsonOption,
    StoreOption,
    choice_enum,
)
from ragcli.cli.progress import progress_bar, step_status
from ragcli.cli.render import (
    ListFormat,
    RecordList,
    emit_json,
    emit_outcome,
    emit_records,
    human_size,
    printable,
    resolve_format,
    stderr_console,
    stdout_console,
)


SplitBy = choice_enum("SplitBy", SPLIT_BY)


LockTimeoutOption = Annotated[
    float,
    typer.Option(
        min=0, help="Seconds to wait while another rag process writes the same index, then give up (exit 1)."
    ),
]


def ingest(
    paths: Annotated[
        Optional[List[str]],  # str, not Path: Path("") would be "." and an empty argument this folder
        typer.Argument(
            help="Folders (walked recursively) and files; default: the roots ingested before.",
            show_default=False,
        ),
    ] = None,
    index: IndexOption = None,
    group: GroupOption = None,
    split_by: Annotated[
        Optional[SplitBy], typer.Option(help="Unit of the windows.", show_default=False)
    ] = None,
    chunk_size: Annotated[Optional[int], typer.Option(help="Units per window.", show_default=False)] = None,
    chunk_overlap: Annotated[
        Optional[int], typer.Option(help="Units shared by neighbouring windows.", show_default=False)
    ] = None,
    include: Annotated[
        Optional[List[str]],
        typer.Option(
            help="Only files matching this gitignore-style pattern (repeatable); remembered per folder.",
            show_default=False,
        ),
    ] = None,
    exclude: Annotated[
        Optional[List[str]],
        typer.Option(
            help="Skip files matching this gitignore-style pattern (repeatable); remembered per folder.",
            show_default=False,
        ),
    ] = None,
    no_filters: Annotated[
        bool,
        typer.Option(
            "--no-filters", help="Forget the --include/--exclude patterns remembered for these folders."
        ),
    ] = False,
    prune: Annotated[
        bool,
        typer.Option(
            help="Remove indexed documents whose files are gone from the given folders (on by default)."
        ),
    ] = True,
    rebuild: Annotated[
        bool, typer.Option(help="Build a fresh index (e.g. for another model) and swap it in when complete.")
    ] = False,
    embed_model: EmbedModelOption = None,
    embed_runtime: EmbedRuntimeOption = None,
    batch_size: Annotated[
        int,
        typer.Option(
            min=1,
            help="Chunks embedded and committed per transaction (smaller: less memory, finer resume points).",
        ),
    ] = 256,
    strict: Annotated[
        bool, typer.Option(help="Exit 1 when any file failed to read (default: report failures, exit 0).")
    ] = False,
    lock_timeout: LockTimeoutOption = 600.0,
    store: StoreOption = None,
    json_output: JsonOption = False,
    defer_embedding: Annotated[
        bool,
        typer.Option(
            "--defer-embedding",
            help="Return once the text is indexed (BM25 finds it at once); `rag embed` (or the next "
            "ingest, or --watch) adds the vectors.",
        ),
    ] = False,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            "-w",
            help="After ingesting, keep watching the folders and apply every change (create, "
            "edit, rename, delete) as it happens, one line per change on stderr; Ctrl-C stops (exit 130) "
            "with everything committed.",
        ),
    ] = False,
) -> None:
    """Read folders of documents into the index; re-running only touches what changed.

    Reads text (txt md rst html), pdf, docx, odt, rtf, epub, slides (pptx), spreadsheets
    (xlsx xlsm ods csv tsv), mail (eml mbox), source code (py js ts go rs java c h sh toml
    yaml json org tex) and, with the ocr extra, scans (png jpg tiff, PDF pages without text).
    Skips hidden, binary and unsupported files (-v names them), .gitignore/.ragignore'd
    paths, node_modules, virtualenvs and build outputs. Unreadable files are reported one
    per line and the rest is ingested. Each folder's options (patterns, group) are
    remembered: `rag ingest` with no paths reads every folder again with its own, and says
    on stderr what it walks; flags given replace them, and say what changed. Only one
    process writes an index at a time: a second one waits (saying so) up to --lock-timeout
    seconds.

    Example: rag ingest ~/notes ~/papers --include '*.pdf' --group fine

    Example: rag ingest ~/notes --watch   (keeps the index current while you edit)

    Example: rag ingest ~/notes --store http://localhost:19530   (content in Milvus)

    Example: rag ingest ~/papers --defer-embedding && rag embed --background
    """
    started = time.perf_counter()  # the summary reports wall time, model preparation included
    from ragcli.index import open_index
    from ragcli.types import IngestOptions

    if watch:
        _refuse_with_watch(rebuild=rebuild, store=store)
    runtime = embed_runtime.value if embed_runtime is not None else None
    index_ = open_index(index, embed_model=embed_model, embed_runtime=runtime, group=group)
    options = IngestOptions(
        group=group,
        split_by=split_by,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        include=include or (),
        exclude=exclude or (),
        forget_filters=no_filters,
    )
    plan = index_.ingest_plan(paths, options)  # a usage error before the model loads
    err = stderr_console()
    _say_plan(err, plan)
    _load_embedder(err, index_, fresh=rebuild)
    if watch:
        from ragcli.cli.watch import run_watch

        run_watch(
            lambda stop: index_.watch(paths, options, stop=stop, batch_chunks=batch_size, plan=plan),
            plan.roots,
        )
        return
    with progress_bar(err, "reading", unit="files") as bar:
        report = index_.ingest(
            paths,
            options,
            prune=prune,
            batch_chunks=batch_size,
            rebuild=rebuild,
            progress=bar,
            lock_timeout=lock_timeout,
            on_wait=_say_waiting,
            store=store,
            defer_embedding=defer_embedding,
            plan=plan,
        )
    _say_outcome(err, report, started=started, json_output=json_output)
    if strict and report.failed:
        raise typer.Exit(1)


def _refuse_with_watch(*, rebuild: bool, store: str | None) -> None:
    """--watch keeps one local index current: a rebuild or another store comes first, on its own."""
    if rebuild:
        raise typer.BadParameter("--rebuild cannot be combined with --watch: rebuild first, then watch")
    if store:
        raise typer.BadParameter(
            "--store cannot be combined with --watch: ingest with --store first, then watch"
        )


def _load_embedder(err, index_, *, fresh: bool) -> None:
    """Load the embedding model before reading, under a status line; a one-time preparation
    (a download, a conversion) is said once it is done, with its time."""
    with step_status(err, "loading the embedding model") as step:
        prepared_at = time.monotonic()
        index_.embedder(fresh=fresh, notify=step.say)
    if step.said and step.live:
        done = step.said[-1].split(" (")[0]
        err.print(f"{done}: done in {time.monotonic() - prepared_at:.1f} s", highlight=False)


def _say_outcome(err, report, *, started: float, json_output: bool) -> None:
    """Failed files one per line on stderr, then the report (JSON or the summary line with the
    wall time since `started`), then, for a deferred run, how to add the vectors."""
    for failure in report.failed:
        message = failure.reason if failure.path in failure.reason else f"{failure.path}: {failure.reason}"
        err.print(f"[red]failed[/red] {escape(printable(message))}", highlight=False)
    if report.left_out:
        _say_left_out(report.left_out)
    if report.removed_earlier:
        _say_removed_earlier(report.removed_earlier)
    summary = (
        f"{report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.removed} removed, {report.skipped} skipped, {len(report.failed)} failed; "
        f"{report.chunks} chunks written, "
        f"{report.embedded} embedded, {report.vectors} vectors in {_groups_named(report.group)}; "
        f"{time.perf_counter() - started:.1f} s"
    )
    emit_outcome("ingest", report.to_dict(), summary, json_output=json_output)
    if report.vectors_deferred:
        err.print(
            "text indexed (BM25 finds it now); run `rag embed` (or `rag embed --background`) for the vectors",
            highlight=False,
            markup=False,
        )


def _groups_named(merged: str) -> str:
    """``group 'medium'``, or ``groups 'medium', 'fine'`` for a report merged over several."""
    names = merged.split(", ")
    return f"group{'s' if len(names) > 1 else ''} " + ", ".join(f"'{name}'" for name in names)


def _say_plan(err, plan) -> None:
    """What a bare ingest is about to walk, what changed, and patterns that match no file."""
    from ragcli.ingest.plan import pattern_warnings

    for line in [*plan.notices, *pattern_warnings(plan)]:
        err.print(f"rag: {line}" if not line.startswith("  ") else line, highlight=False, markup=False)


def _say_left_out(paths: list[str]) -> None:
    """Documents the globs left out are kept (their files exist): say which, and how to drop them."""
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    stderr_console().print(
        f"kept {len(paths)} indexed document(s) that --include/--exclude leave out but still exist "
        f"({printable(shown)}): `rag rm PATH` removes them",
        highlight=False,
        markup=False,
    )


def _say_removed_earlier(paths: list[str]) -> None:
    """Files `rag rm` removed stay out of later ingests of their folder: say which, and how to
    add one back, so a summary of nothing added does not look like a missed file."""
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    stderr_console().print(
        f"left out {len(paths)} file(s) removed earlier with `rag rm` ({printable(shown)}): "
        "name one in `rag ingest` to add it back",
        highlight=False,
        markup=False,
    )


def _say_waiting(message: str) -> None:
    stderr_console().print(message, highlight=False, markup=False)


FACTS_LIST = RecordList("status", "facts", ("key", "value"))


def status(
    index: IndexOption = None, json_output: JsonFormatOption = False, output_format: FormatOption = None
) -> None:
    """Show what the index holds: documents, chunks, groups, model, sizes, last ingest.

    Off a terminal (and with --format tsv/csv) each fact is one `key<TAB>value` line, e.g.
    `documents 12` or `groups.medium.chunks 340`.

    Example: rag status --json | jq .documents
    """
    from ragcli.index import open_index

    output = resolve_format(output_format, json_output)
    info = open_index(index).status()
    if output.format is ListFormat.json:
        emit_json("status", info)
        return
    facts = [{"key": key, "value": value} for key, value in flatten(info)]
    emit_records(output, FACTS_LIST, facts, human=lambda: _print_status(info))


def flatten(value, prefix: str = ""):
    """Nested dicts as (dotted.key, value) pairs: {"a": {"b": 1}} -> ("a.b", 1)."""
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            yield from flatten(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def _print_status(info: dict) -> None:
    out = stdout_console()
    out.print(f"index      {printable(info['index'])}", highlight=False, markup=False)
    out.print(f"documents  {info['documents']}    chunks {info['chunks']}    vectors {info['embeddings']}")
    if info.get("types"):
        kinds = ", ".join(f"{kind} {count}" for kind, count in info["types"].items())
        out.print(f"types      {printable(kinds)}", highlight=False, markup=False)
    out.print(
        f"model      {printable(info['model'])} (dimension {info['dimension']})",
        highlight=False,
        markup=False,
    )
    out.print(
        f"size       database {human_size(info['sizes']['database'])}, "
        f"vectors {human_size(info['sizes']['vectors'])}"
    )
    store = info["store"]
    where = "" if store["uri"] is None else f" {store['uri']}"
    out.print(f"store      {store['backend']}{printable(where)}", highlight=False, markup=False)
    table = Table("group", "split", "size", "overlap", "chunks", "vectors", "search")
    for name, g in info["groups"].items():
        search = g["vector_search"]
        kind = (
            search["type"]
            if search["type"] == "exact"
            else f"{search['type']} (nlist {search['nlist']}, nprobe {search['nprobe']})"
        )
        table.add_row(
            escape(printable(name)),
            g["split_by"],
            str(g["chunk_size"]),
            str(g["chunk_overlap"]),
            str(g["chunks"]),
            str(g["vectors"]) + ("" if g["vectors_current"] else " (stale)"),
            kind,
        )
    out.print(table)
    for root in info["roots"]:
        options = info["root_options"].get(root)
        said = "" if options is None else f"  ({_describe_options(options)})"
        out.print(f"root       {printable(root)}{said}", highlight=False, markup=False)
    embedding = info.get("embedding") or {}
    if embedding.get("share", 1.0) < 1.0:
        out.print(
            f"embedded   {embedding['embedded_chunks']} of {embedding['chunks']} chunks "
            f"({100 * embedding['share']:.0f}%); the rest is found by BM25 only until `rag embed`",
            highlight=False,
            markup=False,
        )
    job = embedding.get("background")
    if job:
        state = "running" if job["running"] else "not running"
        out.print(f"background embed: pid {job['pid']} {state}, log {printable(job['log'])}", highlight=False)
    last = info["last_ingest"]
    if last:
        out.print(
            f"last ingest: {last['added']} added, {last['updated']} updated, {last['removed']} removed, "
            f"{last['failed']} failed in {last['seconds']} s",
            highlight=False,
        )


def _describe_options(options: dict) -> str:
    """Every group the root is read into, with its patterns: `group medium; group fine, include '*.md'`."""
    from ragcli.ingest.remembered import parse_root_options

    return "; ".join(group.describe() for group in parse_root_options({"": options})[""].values())


DOCUMENTS_LIST = RecordList("documents", "documents", ("path", "file_type", "size", "modified", "chunks"))


def ls(
    index: IndexOption = None, json_output: JsonFormatOption = False, output_format: FormatOption = None
) -> None:
    """List indexed documents with their chunk counts per group.

    Off a terminal each document is one tab-separated line (path, type, bytes, modified,
    chunks per group), so `rag ls | grep notes | cut -f1` gives paths.

    Example: rag ls --json | jq -r '.documents[].path'
    """
    from ragcli.index import open_index

    output = resolve_format(output_format, json_output)
    documents = open_index(index).documents()
    rows = [{**doc, "chunks": ",".join(f"{g}:{n}" for g, n in doc["chunks"].items())} for doc in documents]
    if output.format in (ListFormat.json, ListFormat.jsonl):
        rows = documents
    emit_records(output, DOCUMENTS_LIST, rows, human=lambda: _print_ls(documents))


def _print_ls(documents: list[dict]) -> None:
    table = Table("type", "size", "chunks", "modified")
    table.add_column("path", overflow="fold")
    for doc in documents:
        chunks = ", ".join(f"{g}:{n}" for g, n in doc["chunks"].items())
        table.add_row(
            doc["file_type"],
            human_size(doc["size"] or 0),
            escape(printable(chunks)),
            (doc["modified"] or "")[:10],
            escape(printable(doc["path"])),
        )
    stdout_console().print(table)


def _complete_paths(ctx: typer.Context, incomplete: str) -> list[str]:
    from ragcli.cli.completions import indexed_paths

    return indexed_paths(incomplete, ctx.params.get("index"))


def rm(
    paths: Annotated[
        List[str], typer.Argument(help="Indexed files or folders to remove.", autocompletion=_complete_paths)
    ],
    index: IndexOption = None,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", "-y", help="Do not ask before removing every document (needed without a terminal)."
        ),
    ] = False,
    lock_timeout: LockTimeoutOption = 600.0,
    json_output: JsonOption = False,
) -> None:
    """Remove documents (a folder removes everything indexed under it) from the index.

    The removal lasts: later ingests of the folder skip what was removed. To add a file
    back, name it (or a folder inside the removed one): rag ingest ~/notes/old-draft.md.
    Removing every document (e.g. rag rm /) asks first; --yes skips the question.

    Example: rag rm ~/notes/old-draft.md
    """
    from ragcli.errors import RagError
    from ragcli.index import open_index

    index_ = open_index(index)
    paths = [_as_indexed(index_, path) for path in paths]
    plan = index_.plan_removal(paths)
    if not plan.matched:
        raise RagError(f"nothing indexed under {', '.join(map(str, paths))}: see `rag ls`")
    if plan.everything and not yes:
        _confirm_remove_all(plan.total, index_.path)
    removed = index_.remove(paths, lock_timeout=lock_timeout, on_wait=_say_waiting)
    summary = (
        f"{removed} document(s) removed; later ingests skip "
        f"{printable(', '.join(paths))} (name it in `rag ingest` to add it back)"
    )
    payload = {"removed": removed, "excluded": [str(t) for t in plan.targets]}
    emit_outcome("rm", payload, summary, json_output=json_output)


def _as_indexed(index_, path: str) -> str:
    """`path`, or the indexed name a table or TSV line shows as `path` (control characters
    escaped, e.g. ``\\n``) when nothing is indexed under `path` itself."""
    from ragcli.cli.render import unprintable

    candidates = unprintable(path)
    if not candidates or index_.plan_removal([path]).matched:
        return path
    return next((name for name in candidates if index_.plan_removal([name]).matched), path)


def _confirm_remove_all(total: int, index_dir: Path) -> None:
    """Ask on a terminal; without one, refuse (exit 2) unless --yes was given."""
    import sys

    from ragcli.errors import UsageError

    question = f"remove all {total} documents from the index at {index_dir}?"
    if not sys.stdin.isatty():
        raise UsageError(f"refusing to {question[:-1]} without confirmation: add --yes")
    if not typer.confirm(f"rag: {question}", default=False, err=True):
        raise typer.Exit(1)
