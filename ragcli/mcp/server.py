"""`rag mcp`: the index as a Model Context Protocol server over stdio (official `mcp` SDK 2.x).

Four tools wrap `ragcli.mcp.tools.IndexTools`: `search`, `ask`, `get` and `status`. Each
runs its work on a worker thread, so the server keeps reading the client (pings,
cancellations) and sends progress notifications while a call runs; the client receives them
when it sent a progressToken. A failure comes back as a tool result with ``isError`` set and
the one line the CLI would print (``rag: error: ...``); the server carries on.

Stdout carries protocol messages only: while serving, the SDK's stdio transport points file
descriptor 1 at stderr and writes the protocol to a private duplicate, so whatever a library
prints (llama.cpp, onnxruntime, a stray ``print``) lands on stderr, not in the stream.

This module imports the SDK at the top; only `rag mcp` imports it.
"""

# No `from __future__ import annotations`: the SDK reads the tool signatures at runtime.
import json
from functools import partial
from typing import Annotated, Any, Callable, Literal, Optional, Union

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationError

from ragcli import __version__
from ragcli.call_options import argument_problems, checked_json_filters
from ragcli.mcp.tools import IndexTools
from ragcli.mcp.worker import WorkerTools
from ragcli.choices import ANSWER_STYLES, EVIDENCE_CHARS, FUSIONS, MAX_EVIDENCE_CHARS, MODES, RERANKERS
from ragcli.errors import RagError

INSTRUCTIONS = (
    "Local document search over the user's own files (a ragcli index). Use `search` to find passages "
    "(each hit has path, page, score, text and chunk_id), `get` to read a whole document, one page of it "
    "or one chunk by chunk_id, `ask` for a short answer with numbered citations, and `status` to see "
    "what is indexed. Cite hits by path and page."
)

# Built from the one choice list each (a tuple subscript means every member, as `Literal[a, b]`).
Mode = Literal[MODES]  # type: ignore[valid-type]
Reranker = Literal[RERANKERS]  # type: ignore[valid-type]
Fusion = Literal[FUSIONS]  # type: ignore[valid-type]
AnswerStyle = Literal[ANSWER_STYLES]  # type: ignore[valid-type]
Filters = Optional[Annotated[dict[str, Union[str, list[str]]], BeforeValidator(checked_json_filters)]]
FILTERS_HELP = (
    "Metadata filters, key -> value or list of values (values of one key OR-ed, keys AND-ed). Keys: "
    "file_type (pdf, md, txt, docx, html), file_name, path (a glob, e.g. '*/notes/*'), title, "
    "modified / created (a comparison, e.g. '>=2024-01-01'), or any stored metadata key. "
    'Example: {"file_type": ["pdf", "md"], "modified": ">=2024-01-01"}.'
)

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def _result(data: dict[str, Any]) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _error(error: object) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"rag: error: {error}")], is_error=True)


def bad_arguments(tool: str, error: ValidationError) -> str:
    """One line for arguments that do not fit a tool's schema, like the CLI's usage errors."""
    return f"{tool}: bad arguments: {argument_problems(error, 'arguments')}"


def unknown_arguments(schema: dict[str, Any], arguments: Optional[dict[str, Any]]) -> Optional[str]:
    """One line naming the arguments a tool does not take (the SDK would drop them unread, so a
    misspelt or unsupported option would be silently ignored), or None when all are known."""
    known = schema.get("properties", {})
    unknown = sorted(set(arguments or {}) - set(known))
    if not unknown:
        return None
    takes = ", ".join(known) or "no arguments"
    return f"{', '.join(unknown)}: not an argument of this tool (it takes: {takes})"


def strictly_typed(tool: Any, arguments: Optional[dict[str, Any]]) -> None:
    """Refuse an argument of another JSON type than its schema's (`"top_k": "3"`, `true` or
    `2.0`), as `rag serve`'s API does, instead of the SDK's coercion (`true` would be one hit).
    A list or object sent as JSON text is still read, as the SDK reads it (some clients send
    them so).

    Raises:
        ValidationError: names each argument of the wrong type.
    """
    metadata = tool.fn_metadata
    metadata.arg_model.model_validate(metadata.pre_parse_json(arguments or {}), strict=True)


class RagServer(MCPServer):
    """`MCPServer` whose refused calls (unknown tool, arguments off the schema) answer with one
    `rag: error:` line, as every other tool error does, instead of a multi-line pydantic report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        unknown = unknown_arguments(tool.parameters, arguments) if tool is not None else None
        if unknown:
            return _error(f"{name}: bad arguments: {unknown}")
        if tool is not None:
            try:
                strictly_typed(tool, arguments)
            except ValidationError as error:
                return _error(bad_arguments(name, error))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if isinstance(error.__cause__, ValidationError):
                return _error(bad_arguments(name, error.__cause__))
            if self._tool_manager.get_tool(name) is None:
                known = ", ".join(tool.name for tool in self._tool_manager.list_tools())
                return _error(f"unknown tool '{name}' (this server has: {known})")
            raise


async def _run(ctx: Context, call: Callable[..., dict[str, Any]], **kwargs: Any) -> CallToolResult:
    """Run a blocking `IndexTools` call on a worker thread, relaying its progress."""

    def progress(done: float, total: Optional[float], message: str) -> None:
        anyio.from_thread.run(partial(ctx.report_progress, done, total, message))

    try:
        return _result(await anyio.to_thread.run_sync(partial(call, progress=progress, **kwargs)))
    except RagError as error:
        return _error(error)


async def _run_plain(call: Callable[..., dict[str, Any]], **kwargs: Any) -> CallToolResult:
    try:
        return _result(await anyio.to_thread.run_sync(partial(call, **kwargs)))
    except RagError as error:
        return _error(error)


class ToolHandlers:
    """The MCP tools as the SDK reads them (each signature is the tool's input schema, each
    docstring its description), each calling the same-named method of `tools` on a worker thread."""

    def __init__(self, tools: Union[IndexTools, WorkerTools]) -> None:
        self._tools = tools

    async def search(
        self,
        ctx: Context,
        query: Annotated[str, Field(min_length=1, description="What to look for: keywords or a question.")],
        mode: Annotated[
            Optional[Mode],
            Field(
                description="bm25: exact words (names, codes, rare terms); dense: meaning "
                "(paraphrases); hybrid: "
                "both fused (the default, good for most queries); llm: a local model picks among hybrid "
                "candidates (slow)."
            ),
        ] = None,
        top_k: Annotated[
            Optional[int], Field(ge=1, le=100, description="Hits to return (default 10).")
        ] = None,
        group: Annotated[
            Optional[str],
            Field(
                description="Chunk group (granularity) to search, e.g. fine, medium, coarse; "
                "default: medium. "
                "`status` lists the index's groups."
            ),
        ] = None,
        filters: Annotated[Filters, Field(description=FILTERS_HELP)] = None,
        min_score: Annotated[
            Optional[float],
            Field(allow_inf_nan=False, description="Drop hits scoring below this (hybrid: the fused score)."),
        ] = None,
        rerank: Annotated[
            Optional[Reranker],
            Field(
                description="Rerank the hits: keyword (keep hits holding every `require` word and no "
                "`exclude` word), cross-encoder (the model of the rerank_model setting), llm (the local "
                "model scores each passage; slow)."
            ),
        ] = None,
        fusion: Annotated[
            Optional[Fusion],
            Field(description="How hybrid fuses its rankings: adaptive (the default), rrf or score."),
        ] = None,
        require: Annotated[
            Optional[list[str]], Field(description="Words or phrases every hit must contain.")
        ] = None,
        exclude: Annotated[
            Optional[list[str]], Field(description="Words or phrases no hit may contain.")
        ] = None,
    ) -> CallToolResult:
        """Search the indexed documents; returns the best matching passages, best first.

        Each hit has rank, score (higher is better; the scale depends on the mode), path, page
        (null for unpaged formats), chunk_id (pass it to `get` for that exact passage), group
        and text. Use `get` with the path to read the whole document.
        """
        return await _run(
            ctx,
            self._tools.search,
            query=query,
            mode=mode,
            top_k=top_k,
            group=group,
            filters=filters,
            min_score=min_score,
            rerank=rerank,
            fusion=fusion,
            require=require,
            exclude=exclude,
        )

    async def ask(
        self,
        ctx: Context,
        question: Annotated[str, Field(min_length=1, description="A question the documents can answer.")],
        mode: Annotated[
            Optional[Mode],
            Field(description="Retrieval mode, as for `search` (default: the settings, as `rag ask`)."),
        ] = None,
        top_k: Annotated[
            Optional[int],
            Field(ge=1, le=50, description="Passages read for the answer (default: as `rag ask`, 5)."),
        ] = None,
        group: Annotated[
            Optional[str],
            Field(description="Chunk group to read, as for `search` (default: the settings, as `rag ask`)."),
        ] = None,
        filters: Annotated[Filters, Field(description=FILTERS_HELP)] = None,
        answer_style: Annotated[
            Optional[AnswerStyle],
            Field(
                description="auto (the default, as `rag ask`): generative with a capable local model, "
                "else evidence; evidence: the retrieved passage that answers, quoted and cited, no "
                "language model; generative: the local model writes the answer (slower).",
            ),
        ] = None,
        max_tokens: Annotated[
            Optional[int],
            Field(ge=1, le=4096, description="Longest generated answer, in tokens (generative style)."),
        ] = None,
        evidence_chars: Annotated[
            Optional[int],
            Field(
                ge=1,
                le=MAX_EVIDENCE_CHARS,
                description="Most characters of quoted evidence in an evidence answer (default: as "
                f"`rag ask`, {EVIDENCE_CHARS}); a longer list or procedure is cut and says so.",
            ),
        ] = None,
    ) -> CallToolResult:
        """Answer a question from the indexed documents, with numbered citations.

        Returns answer (text citing sources as [1], [2]), abstained (true when nothing relevant
        was found: then do not trust answer), citations (number, path, page), sources (the
        passages read, numbered) and support (per answer sentence: the source that backs it and
        a label: supported, partial or unsupported).
        """
        return await _run(
            ctx,
            self._tools.ask,
            question=question,
            mode=mode,
            top_k=top_k,
            group=group,
            filters=filters,
            answer_style=answer_style,
            max_tokens=max_tokens,
            evidence_chars=evidence_chars,
        )

    async def get(
        self,
        path: Annotated[
            Optional[str],
            Field(description="An indexed file's path as hits show it. Give path or chunk_id, not both."),
        ] = None,
        page: Annotated[Optional[int], Field(ge=1, description="With path: only this page (from 1).")] = None,
        chunk_id: Annotated[
            Optional[int], Field(ge=1, description="A hit's chunk_id: just that passage.")
        ] = None,
    ) -> CallToolResult:
        """Read what the index stores: a whole document, one page of it, or one chunk.

        Returns kind (document, page or chunk), path, page, pages (the document's page count),
        text and metadata (file type, size, dates, title). The text is the indexed one, which
        may be older than the file if it changed since the last ingest.
        """
        return await _run_plain(self._tools.get, path=path, page=page, chunk_id=chunk_id)

    async def status(self) -> CallToolResult:
        """Describe the index: its location, document and chunk counts, chunk groups, embedding
        model, sizes and the last ingest."""
        return await _run_plain(self._tools.status)


def build_server(tools: Union[IndexTools, WorkerTools]) -> MCPServer:
    """The MCP server whose tools call `tools` (in this process or in the worker child)."""
    server = RagServer(
        name="ragcli",
        title="ragcli: search your local documents",
        version=__version__,
        instructions=INSTRUCTIONS,
    )
    handlers = ToolHandlers(tools)
    for handler in (handlers.search, handlers.ask, handlers.get, handlers.status):
        server.add_tool(handler, annotations=READ_ONLY)
    return server


def _unparsed_reply(error: Exception) -> Any:
    """The JSON-RPC error answering a line the SDK could not parse: parse error (id null) for
    text that is not JSON, invalid request (with the request's id when it has one) otherwise."""
    import mcp_types as types

    from mcp.shared.message import SessionMessage

    details = error.errors() if isinstance(error, ValidationError) else []
    request_id = next(
        (
            item["input"]["id"]
            for item in details
            if isinstance(item.get("input"), dict) and "id" in item["input"]
        ),
        None,
    )
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None
    not_json = any(item.get("type") == "json_invalid" for item in details)
    code, text = (
        (types.PARSE_ERROR, "parse error") if not_json else (types.INVALID_REQUEST, "invalid request")
    )
    first = f"{details[0]['type']}: {details[0]['msg']}" if details else str(error)
    reply = types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=f"{text}: {first[:200]}")
    )
    return SessionMessage(reply)


class InFlight:
    """Requests read from the client that are not settled yet: not answered, nor cancelled.

    The SDK's serving loop cancels every running handler as soon as the read side ends, so
    a client that writes its requests and closes stdin (a script, a pipe) would lose the
    replies to all but the inline `initialize`. `_serve_stdio` therefore keeps the read
    side open after stdin's end until every request read has been settled.
    """

    def __init__(self) -> None:
        self._open: dict[Any, int] = {}  # request id -> requests with it (a client may reuse one)
        self._idle = anyio.Event()
        self._idle.set()

    def watch(self, item: Any) -> Any:
        """`item` as read from stdin; a request is counted, with a hook for a cancelled one."""
        from mcp.shared.message import ServerMessageMetadata, SessionMessage
        from mcp_types import JSONRPCRequest

        if not isinstance(item.message, JSONRPCRequest) or item.metadata is not None:
            return item
        request_id = item.message.id
        if not self._open:
            self._idle = anyio.Event()
        self._open[request_id] = self._open.get(request_id, 0) + 1

        async def unanswered() -> None:  # the SDK calls it when it settles a request unanswered
            self.settle(request_id)

        return SessionMessage(item.message, ServerMessageMetadata(on_request_unanswered=unanswered))

    def settle(self, request_id: Any) -> None:
        """A request with this id was answered or cancelled (any other id changes nothing)."""
        left = self._open.get(request_id, 0) - 1
        if left > 0:
            self._open[request_id] = left
        elif left == 0:
            del self._open[request_id]
            if not self._open:
                self._idle.set()

    async def wait(self) -> None:
        """Return once every request counted so far has been settled."""
        await self._idle.wait()


class ReplyWatch:
    """The write stream to stdout, settling each request in `in_flight` as its reply is written."""

    def __init__(self, inner: Any, in_flight: InFlight) -> None:
        self._inner, self._in_flight = inner, in_flight

    async def send(self, item: Any) -> None:
        from mcp_types import JSONRPCError, JSONRPCResponse

        await self._inner.send(item)
        if isinstance(item.message, (JSONRPCResponse, JSONRPCError)):
            self._in_flight.settle(item.message.id)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "ReplyWatch":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


async def _serve_stdio(server: MCPServer) -> None:
    """`MCPServer.run_stdio_async`, but a message the SDK cannot parse gets a JSON-RPC error
    reply (the SDK drops it silently, leaving the client waiting for ever), and every request
    read before stdin's end is answered before the server stops (see `InFlight`)."""
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import create_context_streams

    lowlevel = server._lowlevel_server
    in_flight = InFlight()
    async with stdio_server() as (read_stream, write_stream):
        forward, parsed = create_context_streams[Any](0)

        async def pump() -> None:
            async with forward:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(_unparsed_reply(item))
                    else:
                        await forward.send(in_flight.watch(item))
                await in_flight.wait()

        replies = ReplyWatch(write_stream, in_flight)
        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            await lowlevel.run(parsed, replies, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()


def _exit_on_interrupt(tools: Union[IndexTools, WorkerTools]) -> None:
    """Ctrl-C ends the server at once (exit 130). The SDK reads stdin on a thread that no
    cancellation can stop, so the default KeyboardInterrupt would wait for the client's next
    line for ever. Every tool is read-only: there is nothing to commit first."""
    import os
    import signal
    import sys

    def stop(signum: int, frame: Any) -> None:
        try:
            tools.close()
        finally:
            sys.stderr.write("rag mcp: interrupted\n")
            sys.stderr.flush()
            os._exit(130)

    signal.signal(signal.SIGINT, stop)


def serve(tools: Union[IndexTools, WorkerTools]) -> None:
    """Serve `tools` over stdin/stdout until the client closes the stream, then close them."""
    server = build_server(tools)
    _exit_on_interrupt(tools)
    try:
        anyio.run(_serve_stdio, server)
    finally:
        tools.close()
