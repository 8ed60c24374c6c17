"""Running the app under uvicorn (the ASGI server the MCP SDK brings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragcli.index import Index
    from ragcli.serve.app import ServeOptions


def run(search_index: Index, answer_index: Index, options: ServeOptions) -> None:
    """Serve until interrupted; uvicorn's access log is off (requests may carry questions)."""
    import uvicorn

    from ragcli.serve.app import build_app
    from ragcli.serve.engine import Engine

    engine = Engine(
        search_index, answer_index, queue_size=options.queue_size, ask_timeout=options.ask_timeout
    )
    app = build_app(engine, options)
    uvicorn.run(
        app,
        host=options.host,
        port=options.port,
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=5,
        limit_concurrency=200,
    )
