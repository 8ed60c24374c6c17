"""Options shared by several commands, declared once."""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from ragcli.cli.render import ListFormat
from ragcli.choices import EMBED_RUNTIMES, FUSIONS, MODES, RERANKERS


def choice_enum(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A str Enum of `values` for typer (its choices, help and completions); '-' becomes '_' in names."""
    return Enum(name, {value.replace("-", "_"): value for value in values}, type=str)


IndexOption = Annotated[
    Optional[Path],
    typer.Option(
        "--index", help="Index directory (default: $RAG_INDEX, else the user data dir).", show_default=False
    ),
]
StoreOption = Annotated[
    Optional[str],
    typer.Option(
        "--store",
        help="Where a new index keeps its content: a Milvus Lite file (PATH.db) or a Milvus server "
        "(http://host:19530); recorded in the index, so later commands need no flag (default: local). "
        "Credentials come from $MILVUS_TOKEN or $MILVUS_USER/$MILVUS_PASSWORD.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
# For commands that also take --format (`FormatOption`): only there does the help name it.
JsonFormatOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout (= --format json).")
]
FormatOption = Annotated[
    Optional[ListFormat],
    typer.Option(
        "--format",
        help="table (on a terminal; tab-separated lines in a pipe), tsv, csv (both "
        "with a "
        "header), json or jsonl.",
        show_default=False,
    ),
]
EmbedRuntimeOption = Annotated[
    Optional[choice_enum("EmbedRuntime", EMBED_RUNTIMES)],  # type: ignore[valid-type]
    typer.Option(
        "--embed-runtime",
        help="Embedding runtime of a new index: fp32, or int8 (about 1.7x faster on a CPU, slightly "
        "different vectors: an index keeps the one it was built with; "
        "default: $RAG_EMBED_RUNTIME, else fp32).",
        show_default=False,
    ),
]
EmbedModelOption = Annotated[
    Optional[str],
    typer.Option(
        "--embed-model",
        help="Embedding model: a local sentence-transformers folder "
        "(default: $RAG_EMBED_MODEL, else the packaged all-MiniLM-L6-v2).",
        show_default=False,
    ),
]


def _complete_groups(ctx: typer.Context, incomplete: str) -> list[str]:
    from ragcli.cli.completions import group_names

    return group_names(incomplete, ctx.params.get("index"))


def named_group(value: Optional[str]) -> Optional[str]:
    """Refuse an empty `--group ''` (an unset shell variable), which would search the default
    group without a word."""
    if value is not None and not value.strip():
        raise typer.BadParameter("give a group's name, e.g. medium, or leave it out for the default")
    return value


GroupOption = Annotated[
    Optional[str],
    typer.Option(
        "--group",
        "-g",
        help="Chunk group (granularity), e.g. fine, medium, coarse.",
        show_default=False,
        autocompletion=_complete_groups,
        callback=named_group,
    ),
]


Mode = choice_enum("Mode", MODES)
Rerank = choice_enum("Rerank", RERANKERS)


Fusion = choice_enum("Fusion", FUSIONS)


def parse_weights(value: Optional[str]) -> Optional[tuple[float, float]]:
    """`--weights 1,0.5` -> (1.0, 0.5); a usage error (exit 2) when malformed."""
    if value is None:
        return None
    try:
        bm25, dense = (float(part) for part in value.split(","))
    except ValueError:
        raise typer.BadParameter(
            "give two numbers, bm25 then dense, e.g. --weights 1,0.5", param_hint="'--weights'"
        ) from None
    if not (math.isfinite(bm25) and math.isfinite(dense)) or bm25 < 0 or dense < 0 or bm25 + dense == 0:
        raise typer.BadParameter("weights must be non-negative numbers, not both 0", param_hint="'--weights'")
    return bm25, dense


def finite(value: Optional[float]) -> Optional[float]:
    """Refuse `nan` and `inf`, which float options accept and which would drop every hit."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


# Retrieval options shared by `rag query` and `rag ask`.
FiltersOption = Annotated[
    Optional[List[str]],
    typer.Option(
        "--filter",
        "-f",
        help="key=value metadata filter, repeatable: values of one key are OR-ed, keys AND-ed. "
        "Keys: file_name, file_type, path (glob), title, modified/created (e.g. 'modified=>=2024-01-01'; "
        "comparisons of one key are AND-ed, making ranges), or any stored metadata key.",
        show_default=False,
    ),
]
MinScoreOption = Annotated[
    Optional[float],
    typer.Option(
        help="Drop hits scoring below this: BM25 score, cosine similarity (dense), or the fused score "
        "(hybrid: 0-1 for adaptive; RRF scores are small, about 1/(k+rank) per retriever). Applied before "
        "reranking.",
        show_default=False,
        callback=finite,
    ),
]
RerankOption = Annotated[Optional[Rerank], typer.Option(help="Rerank the candidates.", show_default=False)]
RerankModelOption = Annotated[
    Optional[str],
    typer.Option(
        help="Model for --rerank: a local CrossEncoder folder (cross-encoder) or a GGUF (llm).",
        show_default=False,
    ),
]
CandidatesOption = Annotated[
    int,
    typer.Option(min=1, help="Candidates fetched per retriever before fusion, reranking or llm selection."),
]
RequireOption = Annotated[
    Optional[List[str]],
    typer.Option(
        help="Keep only hits containing this word (repeatable, case-insensitive).", show_default=False
    ),
]
ExcludeOption = Annotated[
    Optional[List[str]], typer.Option(help="Drop hits containing this word (repeatable).", show_default=False)
]
FusionOption = Annotated[
    Fusion,
    typer.Option(
        help="Hybrid fusion: adaptive (normalised scores, weights set per query from how clearly each "
        "retriever separates its top hits), rrf (reciprocal rank) or score (min-max normalised scores, "
        "fixed weights)."
    ),
]
WeightsOption = Annotated[
    Optional[str],
    typer.Option(
        help="Fusion weights 'bm25,dense', e.g. 1,0.5 (adaptive: multiplied into its per-query weights).",
        show_default="1,1",
    ),
]
