"""`IndexTools` in a child process, so `rag mcp` starts on two cores instead of one.

A cold `rag mcp` has two big jobs before its first answer: importing the MCP SDK (about 0.7 s
of CPU here, mostly pydantic building the protocol's models) and loading the search models
and the index (about 0.35 s). Both hold the GIL nearly all the time, so a warm-up thread
barely overlaps them; a forked child does. `start_worker` forks before the SDK is imported:
the child opens the index and loads the models while the parent imports the SDK and answers
the client's handshake, then serves the calls the parent forwards.

The two talk over a pair of pipes, one JSON document a line. A request is
``{"call": NAME, "arguments": {...}}``; the child answers with any number of
``{"progress": [done, total, message]}`` lines and then one ``{"result": ...}``,
``{"error": MESSAGE}`` (a `RagError`: the CLI's message) or ``{"failure": TEXT}`` (a bug,
its traceback written to stderr). The child exits when its request pipe closes, which also
happens when the parent dies. Its standard output points at stderr, so nothing it prints
(llama.cpp, onnxruntime) can reach the protocol stream, and it does not hold the client's
pipes open.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any, BinaryIO

from ragcli.mcp.tools import ProgressFn, no_progress
from ragcli.errors import RagError

if TYPE_CHECKING:
    from ragcli.mcp.tools import IndexTools
    from ragcli.index import Index


def can_fork() -> bool:
    """Whether `start_worker` can run here (POSIX `fork`; not on Windows)."""
    return hasattr(os, "fork")


def start_tools(index: Index) -> "WorkerTools | IndexTools":
    """The index's agent tools, loading the search models from now on: in a forked worker where
    the platform can fork (the caller's imports and the models' loading then use two cores),
    else on a thread of this process."""
    if can_fork():
        return start_worker(index)
    from ragcli.mcp.tools import IndexTools

    tools = IndexTools(index)
    tools.warm_in_background()
    return tools


def start_worker(index: Index) -> WorkerTools:
    """Fork a child that opens `index`, loads its search models and then serves calls.

    Call it before anything starts a thread. The parent gets a `WorkerTools` at once.
    """
    requests_in, requests_out = os.pipe()
    responses_in, responses_out = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        status = 1
        try:
            os.close(requests_out)
            os.close(responses_in)
            _detach_from_stdio()
            _serve(index, os.fdopen(requests_in, "rb"), os.fdopen(responses_out, "wb"))
            status = 0
        except KeyboardInterrupt:
            status = 130
        except BaseException:  # noqa: BLE001 - the child must exit here whatever happens
            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(requests_in)
    os.close(responses_out)
    return WorkerTools(pid, os.fdopen(requests_out, "wb"), os.fdopen(responses_in, "rb"), index)


class WorkerTools:
    """The `IndexTools` calls (search, ask, get, status), run by the child `start_worker` made.

    Raises what `IndexTools` raises: `RagError` with the CLI's message; `RuntimeError` for an
    unexpected failure in the child; `RagError` once the child has gone.
    """

    def __init__(self, pid: int, requests: BinaryIO, responses: BinaryIO, index: Index | None = None) -> None:
        self.pid = pid
        self._requests = requests
        self._responses = responses
        self._lock = threading.Lock()
        self._gone: str | None = None
        self._index = index
        self._local: Any = None  # the tools in this process, once the child has gone

    def search(self, query: str, *, progress: ProgressFn = no_progress, **arguments: Any) -> dict[str, Any]:
        return self._call("search", {"query": query, **arguments}, progress)

    def ask(self, question: str, *, progress: ProgressFn = no_progress, **arguments: Any) -> dict[str, Any]:
        return self._call("ask", {"question": question, **arguments}, progress)

    def get(self, **arguments: Any) -> dict[str, Any]:
        return self._call("get", arguments, no_progress)

    def status(self) -> dict[str, Any]:
        return self._call("status", {}, no_progress)

    def close(self, grace: float = 2.0) -> None:
        """Close the request pipe (the child finishes its call and exits) and reap the child;
        one still running after `grace` seconds is terminated."""
        with self._lock:
            if self._local is not None:
                self._local.close()
            self._gone = "the server is closing"
            for stream in (self._requests, self._responses):
                try:
                    stream.close()
                except OSError:
                    pass
        deadline = time.monotonic() + grace
        try:
            while time.monotonic() < deadline:
                if os.waitpid(self.pid, os.WNOHANG) != (0, 0):
                    return
                time.sleep(0.02)
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped already (it ended on its own)
            return

    def _call(self, name: str, arguments: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
        with self._lock:
            if self._gone:
                return self._call_here(name, arguments, progress)
            try:
                self._requests.write(_line({"call": name, "arguments": arguments}))
                self._requests.flush()
                while True:
                    message = self._responses.readline()
                    if not message:
                        raise BrokenPipeError
                    reply = json.loads(message)
                    if "progress" not in reply:
                        return _outcome(reply)
                    progress(*reply["progress"])
            except BrokenPipeError:
                # The server outlives its worker (killed for memory, crashed): this request
                # fails, later ones are answered in this process.
                self._gone = "the index worker process ended unexpectedly (its error is on stderr)"
                self._reap()
                raise RagError(f"{self._gone}; later requests are answered without it") from None

    def _call_here(self, name: str, arguments: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
        """A call on `IndexTools` in this process, after the worker has gone."""
        if self._index is None or self._gone == "the server is closing":
            raise RagError(self._gone or "the index worker is gone")
        if self._local is None:
            from ragcli.mcp.tools import IndexTools

            self._local = IndexTools(self._index)
        call = getattr(self._local, name)
        return call(progress=progress, **arguments) if name in ("search", "ask") else call(**arguments)

    def _reap(self) -> None:
        try:
            os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _outcome(reply: dict[str, Any]) -> dict[str, Any]:
    if "error" in reply:
        raise RagError(reply["error"])
    if "failure" in reply:
        raise RuntimeError(reply["failure"])
    return reply["result"]


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, default=str) + "\n").encode()


def _detach_from_stdio() -> None:
    """Point the child's stdin at /dev/null and its stdout at stderr: the protocol pipes are the
    parent's alone (the client sees end of file when the parent exits)."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)


def _serve(index: Index, requests: BinaryIO, responses: BinaryIO) -> None:
    """The child's loop: warm up, then answer each request until the pipe closes."""
    from ragcli.mcp.tools import IndexTools

    tools = IndexTools(index)
    tools.warm()

    def progress(done: float, total: float | None, message: str) -> None:
        responses.write(_line({"progress": [done, total, message]}))
        responses.flush()

    try:
        for request in requests:
            message = json.loads(request)
            responses.write(_line(_answer(tools, message["call"], message["arguments"], progress)))
            responses.flush()
    finally:
        tools.close()


def _answer(tools: Any, name: str, arguments: dict[str, Any], progress: ProgressFn) -> dict[str, Any]:
    try:
        if name in ("search", "ask"):
            return {"result": getattr(tools, name)(progress=progress, **arguments)}
        return {"result": getattr(tools, name)(**arguments)}
    except RagError as error:
        return {"error": str(error)}
    except Exception as error:  # noqa: BLE001 - reported to the caller; the worker carries on
        traceback.print_exc(file=sys.stderr)
        return {"failure": f"{type(error).__name__}: {error}"}
