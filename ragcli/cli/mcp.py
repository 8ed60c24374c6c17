"""`rag mcp`: serve the index to MCP clients (Claude, Cursor, VS Code ...) over stdio."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Annotated, Iterator, Optional

import typer

from ragcli.cli.options import EmbedModelOption, IndexOption


def mcp(
    index: IndexOption = None,
    embed_model: EmbedModelOption = None,
    model: Annotated[
        Optional[str],
        typer.Option(
            help="GGUF model for the ask tool's choice/generative styles and llm mode (default: $RAG_MODEL, "
            "else the packaged SmolLM2-135M-Instruct).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the index as a Model Context Protocol server on stdin/stdout.

    Tools: search (query, mode, top_k, group, filters, min_score, rerank, fusion, require,
    exclude -> hits with path, page, score, text, chunk_id), ask (question -> answer,
    citations, support, abstained), get (path[+page] or chunk_id -> stored text) and status.
    The search models start loading at launch (in a worker process) and stay loaded. Stdout
    carries only protocol messages; logs go to stderr. An MCP client starts this command
    itself; see the README for the configuration lines.

    Examples:

        claude mcp add ragcli -- rag mcp --index ~/notes-index

        rag mcp --index ~/.local/share/ragcli/indexes/default
    """
    from ragcli.cli.render import warn_if_no_index
    from ragcli.mcp.worker import start_tools
    from ragcli.index import open_index

    index_ = open_index(index, embed_model=embed_model, gguf_model=model)
    warn_if_no_index(index_.path, "rag mcp", "every tool call")
    tools = start_tools(index_)
    with _deferred_model_builds():  # the SDK's import: ~0.6 s, while the models load
        from ragcli.mcp.server import serve
    serve(tools)


@contextmanager
def _deferred_model_builds() -> Iterator[None]:
    """Let pydantic build a model's validator on its first use instead of at class creation.

    The SDK defines some 550 protocol models (two protocol versions); a session uses a few
    dozen, so deferring saves about 0.12 s of the cold start. `defer_build` is pydantic's own
    option; only its default is switched here, for the SDK's import alone. Should pydantic
    move its defaults, nothing is deferred and the import just takes longer.
    """
    try:
        from pydantic._internal._config import config_defaults
    except ImportError:  # pragma: no cover - another pydantic layout
        config_defaults = {}
    before = config_defaults.get("defer_build")
    if before is not None:
        config_defaults["defer_build"] = True
    try:
        yield
    finally:
        if before is not None:
            config_defaults["defer_build"] = before
