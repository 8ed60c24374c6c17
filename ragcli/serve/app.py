"""The Starlette application of `rag serve`: routes, error answers, security layers and /mcp.

Layers, outermost first: plain-text errors turned into JSON, CORS (only with --cors; before
the token, since a browser sends its preflight without one), the token (when one is set), the
1 MB body cap, trusted hosts on a loopback bind (a web page that
rebinds its DNS name to 127.0.0.1 gets 400, not the index), then the routes. Every failure is
``{"error": "one line"}`` with a 4xx/5xx status, never a traceback.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.resources import files
from typing import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ragcli.errors import RagError
from ragcli.serve import routes
from ragcli.serve.bodies import openapi
from ragcli.serve.engine import Engine, McpTools
from ragcli.serve.guard import TOKEN_COOKIE, BodyCap, JsonErrors, TokenGuard

LOG = logging.getLogger("ragcli.serve")
BODY_LIMIT = 1024 * 1024
LOOPBACK = ("127.0.0.1", "localhost", "::1")
STATIC = files("ragcli.serve") / "static"


@dataclass(frozen=True)
class ServeOptions:
    """How `rag serve` was started (the CLI resolves them; see `ragcli.cli.serve`)."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    cors: tuple[str, ...] = ()
    allow_ingest: bool = False
    queue_size: int = 4
    ask_timeout: float = 300.0


def build_app(engine: Engine, options: ServeOptions) -> Starlette:
    """The application over `engine`, with the MCP transport at /mcp."""
    from ragcli.mcp.server import build_server

    mcp = build_server(McpTools(engine))
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp", host=options.host, max_request_body_size=BODY_LIMIT
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        engine.warm()
        async with mcp.session_manager.run():
            yield
        engine.close()

    app = Starlette(
        routes=_routes(options) + list(mcp_app.routes),
        middleware=_middleware(options),
        exception_handlers={
            routes.HTTPProblem: _problem,
            HTTPException: _http_error,
            RagError: _rag_error,
            Exception: _internal,
        },
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.options = options
    return app


def _routes(options: ServeOptions) -> list:
    table = [
        Route("/", page),
        Route("/openapi.json", lambda request: JSONResponse(openapi(options.allow_ingest))),
        Route("/health", routes.health),
        Route("/status", routes.status),
        Route("/query", routes.query, methods=["POST"]),
        Route("/ask", routes.ask, methods=["POST"]),
        Route("/documents", routes.documents),
        Route("/documents/{id:path}", routes.document),
        Route("/files/{id:path}", routes.document_file_route),
        Route("/chunks/{id}", routes.chunk),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]
    if options.allow_ingest:
        table.append(Route("/ingest", routes.ingest, methods=["POST"]))
    return table


def _middleware(options: ServeOptions) -> list[Middleware]:
    from starlette.middleware.cors import CORSMiddleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    layers = [Middleware(JsonErrors)]
    if options.cors:  # outside the token: a browser's preflight never carries it
        layers.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(options.cors),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "mcp-session-id", "mcp-protocol-version"],
                expose_headers=["mcp-session-id", "retry-after"],
            )
        )
    if options.token:
        layers.append(Middleware(TokenGuard, token=options.token))
    layers.append(Middleware(BodyCap, limit=BODY_LIMIT))
    if options.host in LOOPBACK:
        layers.append(
            Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]", "::1"])
        )
    return layers


async def page(request: Request) -> Response:
    """The search page; ``/?token=T`` (remote use) keeps the token in a same-site cookie."""
    response = FileResponse(str(STATIC / "index.html"), headers={"cache-control": "no-store"})
    token = request.app.state.options.token
    if token and request.query_params.get("token") == token:
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
    return response


async def _problem(request: Request, error: Exception) -> Response:
    assert isinstance(error, routes.HTTPProblem)
    return routes.error_response(error.status, str(error), error.headers)


async def _http_error(request: Request, error: Exception) -> Response:
    """Starlette's own refusals (no such route, a method the route does not take), in JSON."""
    assert isinstance(error, HTTPException)
    path = request.url.path
    if error.status_code == 404:
        text = f"no such path: {path} (the API is described at /openapi.json)"
    elif error.status_code == 405:
        allowed = sorted((error.headers or {}).get("Allow", "").split(", "))  # a set's order
        text = f"{request.method} {path} is not allowed: use {', '.join(allowed)}"
    else:
        text = f"{path}: {error.detail}"
    return routes.error_response(error.status_code, text, error.headers)


async def _rag_error(request: Request, error: Exception) -> Response:
    return routes.error_response(routes.status_for(error), str(error))  # type: ignore[arg-type]


async def _internal(request: Request, error: Exception) -> Response:
    LOG.error("%s %s failed", request.method, request.url.path, exc_info=error)
    return routes.error_response(500, "internal error (see the server's log)")
