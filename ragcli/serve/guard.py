"""What every request passes before a route sees it: the token and the body cap; and what
every answer passes on its way out: an error in plain text becomes JSON.

Pure ASGI middleware (not Starlette's `BaseHTTPMiddleware`), so streamed answers and the MCP
transport pass through unbuffered and a client's disconnect reaches them.
"""

from __future__ import annotations

import hmac
import json
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_COOKIE = "rag_token"


async def send_error(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    """A JSON error response: ``{"error": message}``."""
    body = json.dumps({"error": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(key.encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def presented_token(scope: Scope) -> str | None:
    """The token a request carries: `Authorization: Bearer T`, the page's cookie, or ?token=T."""
    headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
    authorization = headers.get("authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == TOKEN_COOKIE:
            return value
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


class TokenGuard:
    """401 for every request that does not carry the token (constant-time comparison)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = presented_token(scope) or ""
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                await send_error(send, 401, "missing or wrong token", {"www-authenticate": "Bearer"})
                return
        await self.app(scope, receive, send)


class BodyCap:
    """413 for a request body over `limit` bytes, whether it says its length or streams it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope["headers"]:
            if key.lower() == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await send_error(send, 413, f"request body over {self.limit} bytes")
                return
        received = 0

        async def capped() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise BodyTooLarge
            return message

        try:
            await self.app(scope, capped, send)
        except BodyTooLarge:
            await send_error(send, 413, f"request body over {self.limit} bytes")


class BodyTooLarge(Exception):
    """A streamed body passed the cap (caught by `BodyCap`)."""


class JsonErrors:
    """Outermost layer: an error a lower layer answers in plain text goes out as
    ``{"error": text}`` with its status and headers, as the API promises for every error.

    Starlette's trusted-host and CORS checks and the MCP transport's request checks answer in
    plain text or with no content type; the routes' own errors are JSON already and pass
    untouched, as does every
    answer that is not an error (streamed ones unbuffered).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] | None = None
        body = b""

        async def relay(message: dict[str, Any]) -> None:
            nonlocal held, body
            if message["type"] == "http.response.start" and _plain_error(message):
                held = message
            elif held is None or message["type"] != "http.response.body":
                await send(message)
            else:
                body += message.get("body", b"")
                if not message.get("more_body", False):
                    await send_error(send, held["status"], _one_line(body), _other_headers(held))

        await self.app(scope, receive, relay)


def _plain_error(start: dict[str, Any]) -> bool:
    """An error status whose body is plain text or of no stated type."""
    content_type = dict(start.get("headers", [])).get(b"content-type", b"text/plain")
    return start["status"] >= 400 and content_type.startswith(b"text/plain")


def _one_line(body: bytes) -> str:
    return " ".join(body.decode("utf-8", "replace").split()) or "error"


def _other_headers(start: dict[str, Any]) -> dict[str, str]:
    """The headers of a plain-text answer but its content type and length."""
    skip = (b"content-type", b"content-length")
    return {
        key.decode("latin-1"): value.decode("latin-1")
        for key, value in start.get("headers", [])
        if key.lower() not in skip
    }
