"""`rag serve`: the index over HTTP (JSON API, MCP at /mcp, a search page at /)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ragcli.cli.options import EmbedModelOption, GroupOption, IndexOption, Mode
from ragcli.config import KEYS
from ragcli.errors import UsageError

TOKEN_ENV = KEYS["serve_token"].env


def serve(
    host: Annotated[
        str, typer.Option(help="Address to listen on. Any but a loopback address requires --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8765,
    index: IndexOption = None,
    token: Annotated[
        Optional[str],
        typer.Option(
            help=f"Every request must carry it (Authorization: Bearer TOKEN); default: ${TOKEN_ENV} "
            "or the serve_token setting.",
            show_default=False,
        ),
    ] = None,
    cors: Annotated[
        Optional[list[str]],
        typer.Option(
            help="Allow browser pages of this origin (repeatable); CORS is off without it.",
            show_default=False,
        ),
    ] = None,
    allow_ingest: Annotated[
        bool,
        typer.Option(
            "--allow-ingest", help="Add POST /ingest, for folders under the index's recorded roots only."
        ),
    ] = False,
    mode: Annotated[
        Optional[Mode],
        typer.Option(help="Default retrieval mode of requests that name none.", show_default=False),
    ] = None,
    group: GroupOption = None,
    embed_model: EmbedModelOption = None,
    model: Annotated[
        Optional[str],
        typer.Option(
            help="GGUF model for generated answers (default: $RAG_MODEL, else the packaged one).",
            show_default=False,
        ),
    ] = None,
    queue: Annotated[
        int, typer.Option(min=0, max=1000, help="Questions that may wait while one is answered; then 503.")
    ] = 4,
    ask_timeout: Annotated[
        float, typer.Option(min=1, max=3600, help="Seconds an answer may take, waiting included.")
    ] = 300.0,
) -> None:
    """Serve the index over HTTP: a JSON API, MCP (streamable HTTP) at /mcp and a search page at /.

    The API answers with the same JSON documents as --json: POST /query, POST /ask (with
    "stream": true, server-sent events), GET /documents, GET /documents/PATH[?page=N],
    GET /status, GET /health; the schema is at /openapi.json. Models load once and stay
    loaded; a change made by another process (rag ingest) is seen on the next request.
    Ctrl-C stops it.

    Examples:

        rag serve --index ~/notes-index

        curl -s localhost:8765/query -H 'content-type: application/json' -d '{"query": "router reset"}'

        RAG_SERVE_TOKEN=$(openssl rand -hex 16) rag serve --host 0.0.0.0
    """
    from ragcli.cli.render import message, warn_if_no_index
    from ragcli.index import open_index

    settings = {"mode": mode, "group": group, "embed_model": embed_model, "gguf_model": model}
    search_index = open_index(index, **settings, serve_token=token or None)
    token = search_index.settings.get("serve_token") or None
    check_exposure(host, token)
    answer_index = open_index(index, **settings)
    from ragcli.serve.app import ServeOptions
    from ragcli.serve.run import bind, run

    options = ServeOptions(
        host=host,
        port=port,
        token=token,
        cors=tuple(cors or ()),
        allow_ingest=allow_ingest,
        queue_size=queue,
        ask_timeout=ask_timeout,
    )
    listening = bind(host, port)
    warn_if_no_index(search_index.path, "rag serve", "every request but /health")
    shown = f"[{host}]" if ":" in host else host
    message(f"rag serve: {search_index.path} on http://{shown}:{port}/ (Ctrl-C stops)")
    run(search_index, answer_index, options, listening)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def check_exposure(host: str, token: str | None) -> None:
    """A server reachable from other machines must ask for a token."""
    if host not in LOOPBACK and not token:
        raise UsageError(
            f"--host {host}: listening beyond this machine needs --token TOKEN "
            f"(or ${TOKEN_ENV}, or the serve_token setting)"
        )
