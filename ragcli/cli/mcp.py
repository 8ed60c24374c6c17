"""`rag mcp`: serve the index to MCP clients (Claude, Cursor, VS Code ...) over stdio."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.options import EmbedModelOption, IndexOption
from ragcli.config import load_settings


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

    Tools: search (query, mode, top_k, group, filters -> hits with path, page, score, text,
    chunk_id), ask (question -> answer, citations, support, abstained), get (path[+page] or
    chunk_id -> stored text) and status. Models load on first use and stay loaded. Stdout
    carries only protocol messages; logs go to stderr. An MCP client starts this command
    itself; see the README for the configuration lines.

    Examples:

        claude mcp add ragcli -- rag mcp --index ~/notes-index

        rag mcp --index ~/.local/share/ragcli/indexes/default
    """
    from ragcli.agent_tools import IndexTools

    settings = load_settings(index=index, embed_model=embed_model, gguf_model=model)
    tools = IndexTools(settings)
    # The index and search models load while the SDK is imported and the client connects.
    tools.warm_in_background()
    from ragcli.mcp_server import serve

    serve(settings, tools)
