"""The index as a handful of calls for agents: search, ask, get, status (what `rag mcp` serves).

`IndexTools` is the long-lived side of a server, over one `ragcli.index.Index` (the front door
every command uses, so settings and options resolve as in the CLI). It opens the index on first
use (so a server starts, and reports a missing index per call, before anything was ingested),
loads each model once, and keeps them across calls. Search and ask share the `Index`'s one
`Searcher` (its `Asker` searches with it), so one set of retrievers and vectors is open. Another process may
ingest meanwhile (`rag ingest --watch`): before each call the index's state is compared with the
last one seen, and what was read from the index (retrievers, vectors) is dropped when it
changed; the models stay. A rebuilt index (a new database file) is reopened.

Every method returns plain JSON-ready data and raises `RagError` with the CLI's message.
Calls are serialised by a lock: the SQLite connection and llama.cpp are not shared between
threads at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ragcli.call_options import ask_options, query_options
from ragcli.errors import UsageError

if TYPE_CHECKING:
    from ragcli.answer.ask import Asker
    from ragcli.index import Index
    from ragcli.retrieval.search import Searcher

# Reports (done, total or None, message) while a long call runs.
ProgressFn = Callable[[float, "float | None", str], None]


@dataclass(frozen=True)
class _State:
    inode: int
    marks: tuple


def no_progress(done: float, total: float | None, message: str) -> None:
    """A `ProgressFn` that reports nowhere."""


class IndexTools:
    """Search, ask, get and status over one index, models loaded once and reused.

    Example::

        tools = IndexTools(open_index("~/idx"))
        tools.search("router reset", mode="bm25", top_k=3)["hits"][0]["path"]
    """

    def __init__(self, index: Index) -> None:
        self.index = index
        self._state: _State | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self.index.close()
            self._state = None

    # -- the calls ------------------------------------------------------------------------
    def search(self, query: str, *, progress: ProgressFn = no_progress, **given: Any) -> dict[str, Any]:
        """Ranked chunks for `query` (the data of `rag query --json`).

        `given`: the search parameters (mode, top_k, group, filters, ...) as
        `ragcli.call_options.query_options` takes them; None means "not given".

        Raises:
            NotIndexed, UsageError, UnknownGroup, UnknownFilter, IndexMismatch.
        """
        if not query.strip():
            raise UsageError("query: give some words to search for")
        options = query_options(self.index, given)
        with self._lock:
            progress(0, 2, "opening the index")
            searcher = self._searcher()
            progress(1, 2, f"searching ({options.mode})")
            hits = searcher.search(query, options)
            progress(2, 2, f"{len(hits)} hits")
        return {"query": query, "mode": options.mode, "hits": [hit.to_dict() for hit in hits]}

    def ask(self, question: str, *, progress: ProgressFn = no_progress, **given: Any) -> dict[str, Any]:
        """Answer `question` from the index with citations (the data of `rag ask --json`).

        `given`: the answer parameters (mode, top_k, filters, answer_style, max_tokens, ...) as
        `ragcli.call_options.ask_options` takes them. None means "not given": the settings
        decide as for `rag ask` (RAG_MODE, the config file's mode, top_k and answer_style,
        else the defaults).

        Raises:
            NotIndexed, ModelNotFound, UsageError and the search errors.
        """
        from ragcli.answer.result import Answer

        if not question.strip():
            raise UsageError("question: ask something")
        options = ask_options(self.index, given)
        with self._lock:
            progress(0, None, "retrieving and reading the sources")
            answer, pieces = None, 0
            for item in self._asker().stream(question, options):
                if isinstance(item, Answer):
                    answer = item
                else:
                    pieces += 1
                    progress(pieces, None, "generating")
            progress(pieces + 1, pieces + 1, "answered")
        return _answer_record(answer.to_dict())

    def get(
        self,
        *,
        path: str | None = None,
        page: int | None = None,
        chunk_id: int | None = None,
    ) -> dict[str, Any]:
        """A stored document, page or chunk (the data of `rag get --json`).

        Raises:
            NotIndexed, NotFound, UsageError.
        """
        if (path is None) == (chunk_id is None):
            raise UsageError("give either path (with an optional page) or chunk_id")
        if page is not None and page < 1:
            raise UsageError(f"page {page}: pages count from 1")
        target = None if path is None else path if page is None else f"{path}:{page}"
        with self._lock:
            return self.index.get(target, chunk=chunk_id).to_dict()

    def status(self) -> dict[str, Any]:
        """What the index holds (the data of `rag status --json`).

        Raises:
            NotIndexed: there is no index yet.
        """
        with self._lock:
            return self.index.status()

    def warm(self) -> None:
        """Open the index and load the search models now (one small search), so the first real
        call does not pay for them. Errors are left for the calls to report."""
        from ragcli.errors import RagError

        try:
            self.search("warm up", top_k=1)
        except (RagError, OSError):
            pass

    def warm_in_background(self) -> threading.Thread:
        """`warm` on a daemon thread; calls made meanwhile wait for it (they share the lock)."""
        thread = threading.Thread(target=self.warm, name="ragcli-warm", daemon=True)
        thread.start()
        return thread

    def with_asker(self, call: Callable[[Asker], Any]) -> Any:
        """`call(asker)` on the open `Asker`, refreshed if the index changed, under the lock.

        For front ends that need the library's objects (hits, a streamed answer) rather than
        this class's records, e.g. `rag serve`.
        """
        with self._lock:
            return call(self._asker())

    # -- the open index -------------------------------------------------------------------
    def _asker(self) -> Asker:
        """The `Index`'s open `Asker` (searching with `_searcher`)."""
        self._searcher()
        return self.index.asker()

    def _searcher(self) -> Searcher:
        """The `Index`'s open `Searcher`, refreshed when the index changed."""
        from ragcli.store.directory import DATABASE_NAME

        database = self.index.path / DATABASE_NAME
        inode = database.stat().st_ino if database.is_file() else -1
        if self._state is not None and self._state.inode != inode:
            self.index.close()  # rebuilt or removed: the open connection reads the old file
            self._state = None
        searcher = self.index.searcher()
        state = _State(inode, tuple(searcher.store.change_meta()))
        if self._state is not None and state != self._state:
            searcher.refresh()
        self._state = state
        return searcher


def _answer_record(record: dict[str, Any]) -> dict[str, Any]:
    """The answer without timings and token counts, which vary per call and help no agent."""
    keep = (
        "question",
        "answer",
        "abstained",
        "citations",
        "citations_inferred",
        "sources",
        "support",
        "model",
        "cached",
    )
    return {key: record[key] for key in keep if key in record}
