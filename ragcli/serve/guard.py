"""What every request passes before a route sees it: the token and the body cap.

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
