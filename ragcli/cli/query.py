"""`rag query`: search the index and print ranked chunks (table, JSON, JSON Lines or paths)."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Any, Iterable, Optional

import typer

from ragcli.arguments import CommandLineFilters
from ragcli.cli.options import (
    CandidatesOption,
    EmbedModelOption,
    ExcludeOption,
    FiltersOption,
    Fusion,
    FusionOption,
    GroupOption,
    IndexOption,
    MinScoreOption,
    Mode,
    RequireOption,
    RerankModelOption,
    RerankOption,
    WeightsOption,
    parse_weights,
)
from ragcli.cli.stdin import stdin_lines
from ragcli.cli.render import SCHEMA_VERSION, emit_json, emit_jsonl, stdout_console


class Format(str, Enum):
    table = "table"
    tsv = "tsv"
    csv = "csv"
    json = "json"
    jsonl = "jsonl"
    paths = "paths"


HIT_COLUMNS = ("rank", "score", "path", "page", "chunk_id", "group", "text")


def query(
    text: Annotated[
        Optional[str],
        typer.Argument(
            metavar="QUERY",
            help="The question or keywords; '-' (or no QUERY with a pipe) reads one query per "
            "line from stdin.",
            show_default=False,
        ),
    ] = None,
    mode: Annotated[
        Optional[Mode],
        typer.Option(
            "--mode",
            "-m",
            help="bm25 (keywords), dense (embeddings), hybrid (both, fused) or llm (a language "
            "model picks among hybrid candidates). Default: $RAG_MODE / config, else hybrid.",
            show_default=False,
        ),
    ] = None,
    top_k: Annotated[
        Optional[int],
        typer.Option(
            "--top-k",
            "-k",
            min=1,
            help="Hits to return. Default: $RAG_TOP_K / config, else 10.",
            show_default=False,
        ),
    ] = None,
    group: GroupOption = None,
    filters: FiltersOption = None,
    min_score: MinScoreOption = None,
    rerank: RerankOption = None,
    rerank_model: RerankModelOption = None,
    candidates: CandidatesOption = 50,
    require: RequireOption = None,
    exclude: ExcludeOption = None,
    fusion: FusionOption = Fusion.adaptive,
    rrf_k: Annotated[int, typer.Option(min=1, help="RRF constant k: larger flattens the rank bonus.")] = 60,
    weights: WeightsOption = None,
    explain: Annotated[
        bool,
        typer.Option(
            help="Show each retriever's rank, score and fusion weight "
            "for this query, and the fused score, per hit."
        ),
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="One JSON document (schema_version, query, mode, hits).")
    ] = False,
    jsonl_output: Annotated[
        bool, typer.Option("--jsonl", help="One JSON object per hit, with its query.")
    ] = False,
    output_format: Annotated[
        Optional[Format],
        typer.Option(
            "--format",
            help="table (on a terminal; tab-separated rank, score, source, snippet in a pipe), "
            "tsv or csv (header, full text), json, jsonl, or paths (unique paths, one per line, for xargs). "
            "Default: table "
            "for one QUERY, jsonl for queries from stdin.",
            show_default=False,
        ),
    ] = None,
    answer: Annotated[
        bool,
        typer.Option(
            "--answer",
            help="Answer from the hits with the local model, "
            "as `rag ask` does (its defaults for everything else).",
        ),
    ] = False,
    open_hit: Annotated[
        bool,
        typer.Option(
            "--open",
            help="Also open the top hit (with --answer: the first cited source) in your viewer, at its "
            "page where the viewer allows; without a display its PATH:PAGE is named on stderr. "
            "Stdout is unchanged.",
        ),
    ] = False,
    index: IndexOption = None,
    embed_model: EmbedModelOption = None,
) -> None:
    """Search the index: the best matching chunks, best first.

    Queries from stdin (QUERY '-' or a pipe) are answered as a stream of JSON lines, one per
    hit, each tagged with its query (or in the --format asked for; tsv and csv gain a query
    column); models load once.

    Examples:

        rag query "how do I reset the router?" -k 5 --filter file_type=pdf

        rag query "lighthouse lens" --mode bm25 --format paths | xargs ls -l

        cat questions.txt | rag query --mode dense

        rag query "lighthouse lens" --open
    """
    from ragcli.index import open_index

    index_ = open_index(index, embed_model=embed_model, mode=mode, top_k=top_k, group=group)
    options = index_.query_options(
        filters=None if filters is None else CommandLineFilters(filters),
        min_score=min_score,
        rerank=rerank,
        rerank_model=rerank_model,
        candidates=candidates,
        require=require,
        exclude=exclude,
        fusion=fusion,
        rrf_k=rrf_k,
        weights=parse_weights(weights),
    )
    fmt = _output_format(json_output, jsonl_output, output_format, answer)
    queries = stdin_lines(
        text, metavar="QUERY", plural="queries", empty="the query is empty: give words to search for"
    )
    if open_hit and queries is not None:
        raise typer.BadParameter(
            "opens the top hit of one QUERY, not of queries from stdin", param_hint="--open"
        )
    with index_:
        if answer:
            answered = _answer(index_, options, text, queries, fmt is Format.json)
            if open_hit:
                from ragcli.cli.ask import open_first_cited

                open_first_cited(answered)
        elif queries is None:
            hits = index_.search(str(text), options)
            _print_hits(str(text), options.mode, hits, fmt, explain)
            if open_hit:
                _open_top_hit(hits)
        else:
            _print_answers(index_, options, fmt, explain)


def _open_top_hit(hits: list) -> None:
    from ragcli.cli.opener import open_cited

    top = hits[0].chunk if hits else None
    open_cited(top and top.path, top and top.page, "top hit")


def _print_answers(index, options, fmt: Optional[Format], explain: bool) -> None:
    """Queries from stdin, answered a batch at a time (`Index.search_many`), printed in order."""
    from ragcli.cli.stdin import OverLong
    from ragcli.cli.stdin_batches import query_batches

    too_long = OverLong("query")
    batches = ([line for line in batch if too_long.allowed(line)] for batch in query_batches(sys.stdin))
    answered = (
        (line, hits)
        for batch in batches
        if batch
        for line, hits in zip(batch, index.search_many(batch, options))
    )
    if fmt in (Format.tsv, Format.csv):
        _print_records(fmt, ((line, hit) for line, hits in answered for hit in hits))
    else:
        for line, hits in answered:
            if fmt is Format.table:
                _print_table_for(line, hits, explain, query_column=True, asked=True)
            else:
                _print_batch(line, options.mode, hits, fmt or Format.jsonl)
    too_long.exit_if_any()


def _output_format(
    json_output: bool, jsonl_output: bool, output_format: Optional[Format], answer: bool
) -> Optional[Format]:
    """The one format asked for; contradictory flags are a usage error (exit 2)."""
    asked = {f for f, on in ((Format.json, json_output), (Format.jsonl, jsonl_output)) if on}
    if output_format is not None:
        asked.add(output_format)
    if len(asked) > 1:
        names = ", ".join(sorted(f.value for f in asked))
        raise typer.BadParameter(
            f"contradictory output formats ({names}): give one of --json, --jsonl, --format",
            param_hint="--format",
        )
    fmt = next(iter(asked), None)
    if answer and fmt not in (None, Format.table, Format.json, Format.jsonl):
        raise typer.BadParameter(
            f"--answer prints an answer, not hits: --format {fmt.value} does not apply (use table or json)",
            param_hint="--format",
        )
    return fmt


def _answer(index, options, text: Optional[str], queries, json_output: bool):
    """`rag query --answer`: the same retrieval, then `rag ask`'s answer step; the answer
    (None for questions from stdin)."""
    from ragcli.cli.ask import print_answer, print_answers

    ask_options = index.ask_options(query=options)
    if queries is not None:
        print_answers(index, queries, ask_options)
        return None
    return print_answer(index, str(text), ask_options, json_output=json_output)


# -- output ---------------------------------------------------------------------------------
def unique_paths(hits: Iterable[Any]) -> list[str]:
    """Hit paths in rank order, each once."""
    return list(dict.fromkeys(hit.chunk.path for hit in hits))


def _print_hits(text: str, mode: str, hits: list, fmt: Optional[Format], explain: bool) -> None:
    if fmt is Format.json:
        emit_json("query", {"query": text, "mode": mode, "hits": [h.to_dict() for h in hits]})
    elif fmt is Format.jsonl:
        emit_jsonl({"query": text, **h.to_dict()} for h in hits)
    elif fmt is Format.paths:
        _print_paths(hits)
    elif fmt in (Format.tsv, Format.csv):
        _print_records(fmt, ((None, hit) for hit in hits))
    else:
        _print_table_for(text, hits, explain, asked=fmt is Format.table)


def _print_records(fmt: Format, pairs) -> None:
    """Hits as TSV/CSV with a header; a query column first when queries came from stdin."""
    from ragcli.cli.render import emit_csv, emit_tsv

    pairs = list(pairs)
    with_query = any(query is not None for query, _ in pairs)
    header = (("query",) if with_query else ()) + HIT_COLUMNS
    rows = [
        ((query,) if with_query else ()) + tuple(hit.to_dict()[c] for c in HIT_COLUMNS)
        for query, hit in pairs
    ]
    (emit_tsv if fmt is Format.tsv else emit_csv)(rows, header)


def _print_table_for(
    text: str, hits: list, explain: bool, query_column: bool = False, asked: bool = False
) -> None:
    """The human table on a terminal or when asked for (`--format table`); else one
    tab-separated line per hit in a pipe.

    With `query_column` (queries from stdin) the table is titled with its query, and each
    line in a pipe starts with it.
    """
    from ragcli.cli.render import emit_tsv, is_terminal, printable

    if asked or is_terminal(sys.stdout):
        if query_column:
            stdout_console().print(f"query: {printable(text)}", markup=False, highlight=False)
        _print_table(text, hits, explain)
        return
    if not hits:
        from ragcli.cli.render import message

        message("no hits")
        return
    from ragcli.cli.snippets import snippet
    from ragcli.places import location

    emit_tsv(
        ([text] if query_column else [])
        + [
            hit.rank,
            f"{hit.score:.4g}",
            location(hit.chunk.path, hit.chunk.page),  # scripts get the form `rag get` takes
            " ".join(snippet(hit.chunk.text, text, 300)[0].split()),
        ]
        + ([explain_line(hit)] if explain else [])
        for hit in hits
    )


def _print_batch(text: str, mode: str, hits: list, fmt: Format) -> None:
    if fmt is Format.paths:
        _print_paths(hits)
    elif fmt is Format.json:
        emit_jsonl(
            [
                {
                    "schema_version": SCHEMA_VERSION,
                    "kind": "query",
                    "query": text,
                    "mode": mode,
                    "hits": [h.to_dict() for h in hits],
                }
            ]
        )
    else:
        emit_jsonl({"query": text, **h.to_dict()} for h in hits)


def _print_paths(hits: list) -> None:
    """One path per line; a control character in a name is shown escaped (see README)."""
    from ragcli.cli.render import printable

    for path in unique_paths(hits):
        sys.stdout.write(printable(path) + "\n")
    sys.stdout.flush()


def _print_table(text: str, hits: list, explain: bool) -> None:
    out = stdout_console()
    if not hits:
        from ragcli.cli.render import stderr_console

        stderr_console().print("no hits", style="yellow")
        return
    if out.width < 100:
        _print_stacked(out, text, hits, explain)
        return
    from rich.table import Table
    from rich.text import Text

    from ragcli.cli.render import printable

    table = Table("#", "score", "source", "snippet", show_lines=True, expand=True)
    table.columns[2].overflow = "fold"
    table.columns[3].ratio = 1
    for hit in hits:
        snippet = highlighted_snippet(hit.chunk.text, text)
        if explain:
            snippet.append("\n" + explain_line(hit), style="dim")
        table.add_row(str(hit.rank), f"{hit.score:.4g}", Text(printable(_source(hit))), snippet)
    out.print(table)


def _print_stacked(out, text: str, hits: list, explain: bool) -> None:
    """Narrow terminals: a header line per hit, the snippet indented under it."""
    from rich.markup import escape
    from rich.padding import Padding

    from ragcli.cli.render import printable

    for hit in hits:
        out.print(
            f"[bold]{hit.rank}.[/bold] {hit.score:.4g}  [cyan]{escape(printable(_source(hit)))}[/cyan]",
            highlight=False,
        )
        # About three wrapped lines, whatever the width.
        snippet = highlighted_snippet(hit.chunk.text, text, width=max(60, 3 * (out.width - 3)))
        out.print(Padding(snippet, (0, 0, 0, 3)))
        if explain:
            out.print(Padding(explain_line(hit), (0, 0, 0, 3)), style="dim", highlight=False)


def _source(hit) -> str:
    """Where a hit is, for people: ``deck.pptx:3 (slide 3)``."""
    from ragcli.places import cited_place

    return cited_place(hit.chunk.path, hit.chunk.page, hit.chunk.text)


def highlighted_snippet(text: str, query: str, width: int = 300):
    """A window of the chunk text around its first query term, the terms in bold.

    A page break reads as a space, as in the tab-separated lines; other control characters
    are shown as escapes (`terminal_text`).
    """
    from rich.text import Text

    from ragcli.cli.render import terminal_text
    from ragcli.cli.snippets import snippet
    from ragcli.text import PAGE_BREAK

    window, spans = snippet(terminal_text(text.replace(PAGE_BREAK, " ")), query, width)
    # Same length as the window, so the spans still line up; controls become spaces.
    rich_text = Text("".join(" " if not char.isprintable() and char != "\n" else char for char in window))
    for start, end in spans:
        rich_text.stylize("bold magenta", start, end)
    return rich_text


def explain_line(hit) -> str:
    """Each retriever's rank, score and fusion weight (for this query), then the fused score."""
    parts = [
        f"{name} #{int(part['rank'])} {part['score']:.4g}" + _weight_note(part)
        for name, part in sorted(hit.sources.items())
    ]
    fused = "bm25" in hit.sources or "dense" in hit.sources
    missing = [name for name in ("bm25", "dense") if fused and name not in hit.sources]
    parts += [f"{name} -" for name in missing]
    return " · ".join(parts + [f"fused {hit.score:.4g}"]) if hit.sources else f"score {hit.score:.4g}"


def _weight_note(part) -> str:
    """The share this retriever had in this query's fusion, e.g. " (w 0.80)"; empty when not fused."""
    return f" (w {part['weight']:.2f})" if "weight" in part else ""
