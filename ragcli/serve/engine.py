"""The served index: models loaded once, searches and answers on worker threads.

Two `IndexTools` (`ragcli.mcp.tools`) over the same index, so a long generation holding one
never delays the other: searches, documents and status run on the *search* thread, answers on
the *answer* thread. Both notice when another process changed the index (`rag ingest`) and
re-read it before the next call, keeping the models loaded. The answer side takes at most
`queue_size` waiting questions besides the one running; past that `admit` refuses (the app
answers 503 with Retry-After). A running answer stops at its next piece once cancelled
(the client went away) or past its deadline.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ragcli.mcp.tools import IndexTools
from ragcli.errors import RagError

if TYPE_CHECKING:
    from ragcli.answer.options import AskOptions
    from ragcli.index import Index
    from ragcli.retrieval.search import QueryOptions

LOG = logging.getLogger("ragcli.serve")


@dataclass
class AnswerJob:
    """One question in the answer queue; its events arrive on `events` as (kind, data) pairs:
    ("token", text) pieces, then ("answer", record) or ("error", RagError | message), then ("end", None)."""

    question: str
    options: AskOptions
    deadline: float
    loop: asyncio.AbstractEventLoop
    closing: threading.Event
    events: asyncio.Queue = field(default_factory=asyncio.Queue)
    cancel: threading.Event = field(default_factory=threading.Event)

    def put(self, kind: str, data: Any = None) -> None:
        """Hand an event to the event loop (called from the answer thread)."""
        self.loop.call_soon_threadsafe(self.events.put_nowait, (kind, data))

    def stopped(self) -> bool:
        return self.cancel.is_set() or self.closing.is_set() or time.monotonic() > self.deadline


class Engine:
    """The index's tools behind two worker threads, with the answer queue's accounting.

    Args:
        search_index, answer_index: two `Index` objects on the same index and settings.
        queue_size: questions that may wait while one is answered.
        ask_timeout: seconds an answer may take, queueing included.
    """

    def __init__(
        self, search_index: Index, answer_index: Index, *, queue_size: int, ask_timeout: float
    ) -> None:
        self.index = search_index
        self.search_tools = IndexTools(search_index)
        self.answer_tools = IndexTools(answer_index)
        self.queue_size = queue_size
        self.ask_timeout = ask_timeout
        self._search_pool = ThreadPoolExecutor(1, thread_name_prefix="ragcli-search")
        self._answer_pool = ThreadPoolExecutor(1, thread_name_prefix="ragcli-answer")
        self._lock = threading.Lock()
        self._closing = threading.Event()  # set at shutdown: running answers stop at their next piece
        self.pending = 0  # answers running or waiting
        self.cancelled = 0  # answers stopped early (client gone or deadline)

    # -- searches ---------------------------------------------------------------------------
    async def run(self, call: Callable[[], Any]) -> Any:
        """`call()` on the search thread."""
        return await asyncio.get_running_loop().run_in_executor(self._search_pool, call)

    async def search(self, query: str, options: QueryOptions) -> list[dict[str, Any]]:
        """The hits of `query` as `rag query --json` records."""

        def call(asker: Any) -> list[dict[str, Any]]:
            return [hit.to_dict() for hit in asker.searcher.search(query, options)]

        if "llm" in (options.mode, options.rerank):  # a language model chooses: as slow as an answer
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._answer_pool, lambda: self.answer_tools.with_asker(call))
        return await self.run(lambda: self.search_tools.with_asker(call))

    def warm(self) -> None:
        """Open the index and load the search models on both sides now (errors wait for calls)."""
        self._search_pool.submit(self.search_tools.warm)
        self._answer_pool.submit(self.answer_tools.warm)

    # -- answers ----------------------------------------------------------------------------
    def admit(self, question: str, options: AskOptions) -> AnswerJob | None:
        """Queue a question; None when the queue is full."""
        with self._lock:
            if self.pending > self.queue_size:
                return None
            self.pending += 1
        deadline = time.monotonic() + self.ask_timeout
        job = AnswerJob(question, options, deadline, asyncio.get_running_loop(), self._closing)
        self._answer_pool.submit(self._answer, job)
        return job

    def queue_state(self) -> dict[str, int]:
        with self._lock:
            pending = self.pending
        return {
            "running": min(pending, 1),
            "waiting": max(pending - 1, 0),
            "capacity": self.queue_size,
            "cancelled": self.cancelled,
        }

    def _answer(self, job: AnswerJob) -> None:
        try:
            if not job.stopped():
                self.answer_tools.with_asker(lambda asker: self._stream(asker, job))
            if job.stopped():
                job.put("error", "the answer took too long" if not job.cancel.is_set() else "cancelled")
        except RagError as error:
            job.put("error", error)
        except Exception:  # a bug: logged with its traceback, the client gets one line
            LOG.exception("answering %r failed", job.question)
            job.put("error", "internal error (see the server's log)")
        finally:
            with self._lock:
                self.pending -= 1
                self.cancelled += job.stopped()
            job.put("end")

    @staticmethod
    def _stream(asker: Any, job: AnswerJob) -> None:
        from ragcli.answer.result import Answer

        pieces = asker.stream(job.question, job.options)
        try:
            for item in pieces:
                if job.stopped():
                    return  # closing the generator stops llama.cpp between two tokens
                if isinstance(item, Answer):
                    job.put("answer", item.to_dict())
                else:
                    job.put("token", item)
        finally:
            pieces.close()

    def close(self) -> None:
        self._closing.set()
        self._search_pool.shutdown(wait=False, cancel_futures=True)
        self._answer_pool.shutdown(wait=False, cancel_futures=True)
        self.search_tools.close()
        self.answer_tools.close()


class McpTools:
    """The four tools `rag mcp` serves, split over the engine's two sides, so an MCP `ask`
    never holds the lock that searches wait for."""

    def __init__(self, engine: Engine) -> None:
        self.search = engine.search_tools.search
        self.get = engine.search_tools.get
        self.status = engine.search_tools.status
        self.ask = engine.answer_tools.ask

    def close(self) -> None:
        """The engine closes the tools."""
