"""The JSON API's handlers: each parses its body, makes one `Index` call on a worker thread
(`ragcli.serve.engine`) and answers with the CLI's `--json` document (`ragcli.records`)."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, AsyncIterator, Type, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse

from ragcli.errors import IndexBusy, NotIndexed, RagError, UnknownFilter, UnknownGroup, UsageError
from ragcli.records import json_document
from ragcli.call_options import argument_problems, ask_options, query_options
from ragcli.serve.bodies import AskBody, IngestBody, QueryBody
from ragcli.serve.files import document_file, ingest_targets

if TYPE_CHECKING:
    from ragcli.serve.engine import AnswerJob, Engine

Body = TypeVar("Body", bound=BaseModel)
RETRY_AFTER = 5  # seconds a refused /ask is told to wait


class HTTPProblem(Exception):
    """An error answered as ``{"error": message}`` with `status`."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.headers = status, headers


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def status_for(error: RagError) -> int:
    """The HTTP status of a library error: what is missing 404; a request's value the index
    refuses (keyword rerank without words, an unknown filter key) 422, as the body's schema
    refuses a value, so a client tells a request it should change by one status. 400 stays for
    what is not a request at all (a body that is not JSON, a path number that is not one)."""
    from ragcli.answer.context import ContextTooSmall
    from ragcli.retrieval.documents import NotFound

    if isinstance(error, (NotFound, NotIndexed, UnknownGroup)):
        return 404
    if isinstance(error, (UsageError, UnknownFilter, ContextTooSmall)):
        return 422
    if isinstance(error, IndexBusy):
        return 503
    return 500


async def parse(request: Request, model: Type[Body]) -> Body:
    """The request's JSON body as `model`; 415 / 400 / 422 with one line otherwise."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise HTTPProblem(415, "send the body as application/json")
    try:
        data = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError) as error:
        raise HTTPProblem(400, f"malformed JSON: {error}") from None
    if not isinstance(data, dict):
        raise HTTPProblem(400, "the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise HTTPProblem(422, argument_problems(error, "body")) from None


def engine_of(request: Request) -> Engine:
    return request.app.state.engine


def _json(kind: str, payload: dict[str, Any]) -> Response:
    # The CLI's encoding: UTF-8, non-ASCII kept; dates and paths as text.
    body = json.dumps(json_document(kind, payload), ensure_ascii=False, default=str)
    return Response(body.encode("utf-8", "backslashreplace"), media_type="application/json")


# -- search, documents, status ------------------------------------------------------------
async def query(request: Request) -> Response:
    body = await parse(request, QueryBody)
    engine = engine_of(request)
    options = query_options(engine.index, body.model_dump(exclude={"query"}))
    hits = await engine.search(body.query, options)
    return _json("query", {"query": body.query, "mode": options.mode, "hits": hits})


async def documents(request: Request) -> Response:
    engine = engine_of(request)
    return _json("documents", {"documents": await engine.run(engine.index.documents)})


async def document(request: Request) -> Response:
    """One document (``?page=N``: one page of it), as `rag get PATH[:PAGE] --json`."""
    engine, path = engine_of(request), request.path_params["id"]
    page = _page(request)
    if path not in await engine.run(_document_paths(engine)):
        raise HTTPProblem(404, f"{path}: not in the index")
    target = path if page is None else f"{path}:{page}"
    return _json("get", (await engine.run(lambda: engine.index.get(target))).to_dict())


async def chunk(request: Request) -> Response:
    engine = engine_of(request)
    chunk_id = _integer(request.path_params["id"], "chunk id")
    return _json("get", (await engine.run(lambda: engine.index.get(chunk=chunk_id))).to_dict())


async def document_file_route(request: Request) -> Response:
    """The indexed file itself (the page opens a cited PDF at #page=N); 404 for anything else."""
    engine, requested = engine_of(request), request.path_params["id"]
    documents = await engine.run(_document_paths(engine))
    roots = (await engine.run(engine.index.status)).get("roots") or []
    real = document_file(requested, documents, [str(root) for root in roots])
    if real is None:
        raise HTTPProblem(404, "no such indexed document")
    return FileResponse(real, headers={"cache-control": "no-store", "x-content-type-options": "nosniff"})


async def status(request: Request) -> Response:
    engine = engine_of(request)
    return _json("status", await engine.run(engine.index.status))


async def health(request: Request) -> Response:
    """Answered on the event loop, never behind a worker: it stays quick while answers run."""
    return JSONResponse({"ok": True, "answers": engine_of(request).queue_state()})


def _document_paths(engine: Engine):
    return lambda: [record["path"] for record in engine.index.documents()]


def _page(request: Request) -> int | None:
    value = request.query_params.get("page")
    if value is None:
        return None
    page = _integer(value, "page")
    if page < 1:
        raise HTTPProblem(400, f"page {page}: pages count from 1")
    return page


def _integer(value: str, name: str) -> int:
    """A path or query number: ASCII digits (not "٣", which int() reads), at most int64's
    19 digits (most of a Milvus store's 63-bit chunk ids have 19)."""
    if not (value.isascii() and value.isdigit()) or len(value) > 19 or int(value) >= 2**63:
        raise HTTPProblem(400, f"{name} {value!r}: give a whole number")
    return int(value)


# -- answers ------------------------------------------------------------------------------
async def ask(request: Request) -> Response:
    body = await parse(request, AskBody)
    engine = engine_of(request)
    options = ask_options(engine.index, body.model_dump(exclude={"question", "stream"}))
    job = engine.admit(body.question, options)
    if job is None:
        raise HTTPProblem(503, "busy: the answer queue is full", {"retry-after": str(RETRY_AFTER)})
    if body.stream:
        return AnswerStream(job, request)
    return await whole_answer(job, request)


class AnswerStream(StreamingResponse):
    """The answer as server-sent events; however the response ends (done, client gone before
    or during the stream, server stopping), the job is told to stop."""

    def __init__(self, job: AnswerJob, request: Request) -> None:
        super().__init__(
            server_sent_events(job, request),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )
        self.job = job

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.job.cancel.set()  # a no-op once the job has ended


async def whole_answer(job: AnswerJob, request: Request) -> Response:
    answer: dict[str, Any] | None = None
    async for kind, data in job_events(job, request):
        if kind == "answer":
            answer = data
        elif kind == "error":
            return _job_error(data)
    if answer is None:  # the client went away; nobody reads this
        return error_response(499, "cancelled")
    return _json("answer", answer)


async def server_sent_events(job: AnswerJob, request: Request) -> AsyncIterator[str]:
    """``event: token`` per text piece, then ``event: answer`` (the `rag ask --json`
    document: citations and support) or ``event: error``; then ``event: done``."""
    async for kind, data in job_events(job, request):
        if kind == "token":
            yield _event("token", {"text": data})
        elif kind == "answer":
            yield _event("answer", json_document("answer", data))
        elif kind == "error":
            yield _event("error", {"error": str(data), "status": _job_status(data)})
    yield _event("done", {})


async def job_events(job: AnswerJob, request: Request) -> AsyncIterator[tuple[str, Any]]:
    """The job's events until it ends; when the client disconnects (or this is cancelled),
    the job is told to stop, so the model does not generate for nobody."""
    try:
        while True:
            try:
                kind, data = await asyncio.wait_for(job.events.get(), timeout=0.5)
            except asyncio.TimeoutError:
                if await request.is_disconnected():
                    return
                continue
            if kind == "end":
                return
            yield kind, data
    finally:
        job.cancel.set()  # a no-op once the job has ended


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def _job_status(error: Any) -> int:
    return status_for(error) if isinstance(error, RagError) else 504 if "too long" in str(error) else 500


def _job_error(error: Any) -> JSONResponse:
    return error_response(_job_status(error), str(error))


# -- ingest -------------------------------------------------------------------------------
async def ingest(request: Request) -> Response:
    """Re-read folders under the index's recorded roots (only with --allow-ingest)."""
    from ragcli.index import Index

    body = await parse(request, IngestBody)
    engine = engine_of(request)
    roots = [str(root) for root in (await engine.run(engine.index.status)).get("roots") or []]
    paths = ingest_targets(body.paths or roots, roots)
    if paths is None:
        raise HTTPProblem(403, "ingest only reads absolute paths under the index's recorded roots")
    writer = Index(engine.index.settings)  # its own connections; the readers notice the change
    loop = asyncio.get_running_loop()
    report = await loop.run_in_executor(None, lambda: writer.ingest(paths, lock_timeout=30))
    return _json("ingest", report.to_dict())
