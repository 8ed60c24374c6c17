"""The library's front door: `open_index()` returns an `Index` that does what the `rag` commands do.

Example::

    import ragcli

    with ragcli.open_index("my-index") as index:
        index.ingest(["docs/"])
        for hit in index.search("how do I reset the router?", mode="bm25", top_k=3):
            print(hit.rank, hit.chunk.path)
        print(index.ask("How do I reset the router?").text)

An `Index` resolves its settings once, with the same precedence as the CLI (keyword argument
> RAG_* environment variable > config file > the index's own settings > default; see
`ragcli.config`), builds the `QueryOptions` and `AskOptions` of every call from them, and loads
each model lazily, once. Every method delegates to the library function that does the work
(`ragcli.ingest.pipeline`, `ragcli.retrieval.search.Searcher`, `ragcli.answer.ask.Asker`,
`ragcli.store.status`, `ragcli.evaluation`), so the CLI commands are: parse, one call here, render.
What an `Index` writes (ingest, embed, watch, remove) is in `ragcli.index_writes`, a base class.
"""

from __future__ import annotations

from dataclasses import replace
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from ragcli.arguments import (
    ask_fields,
    checked_queries,
    checked_text,
    checked_value,
    checked_words,
    query_fields,
)
from ragcli.choices import ASK_TOP_K, plain_value
from ragcli.config import KEYS, Settings, load_settings
from ragcli.errors import UsageError
from ragcli.index_writes import IndexWrites
from ragcli.types import Closable

if TYPE_CHECKING:
    from ragcli.answer.ask import Asker
    from ragcli.answer.options import AskOptions
    from ragcli.answer.result import Answer
    from ragcli.doctor import Check
    from ragcli.embedding.base import Embedder
    from ragcli.evaluation import AnswerReport, RetrievalReport
    from ragcli.evaluation.answer_eval import AnswerConfiguration
    from ragcli.evaluation.retrieval_eval import Configuration
    from ragcli.generation.llama import Generator
    from ragcli.generation.catalog import ModelEntry
    from ragcli.retrieval.documents import StoredText
    from ragcli.retrieval.search import QueryOptions, Searcher
    from ragcli.types import Hit, Progress

__all__ = ["Index", "open_index"]

# Settings an `open_index` keyword may name; `gguf_model` is the CLI's name for `model`.
SETTING_NAMES = frozenset(KEYS) | {"gguf_model"}
_PLAIN = (str, int, float, bool, type(None))  # option values whose QueryOptions `Index` may reuse
# Option names that are settings too, so the settings layers apply to them (see `Index.ask_options`).
_ASK_SETTINGS = {
    "n_ctx": "ctx",
    "max_tokens": "max_tokens",
    "threads": "threads",
    "answer_style": "answer_style",
    "reader": "reader",
    "evidence_chars": "evidence_chars",
}


def open_index(
    path: str | Path | None = None, *, environ: Mapping[str, str] | None = None, **settings: Any
) -> "Index":
    """Open an index (it need not exist yet: `Index.ingest` creates it), resolving its settings.

    Args:
        path: the index directory; None for $RAG_INDEX, the config file's `index`, else the
            default under the user data dir.
        environ: where RAG_* variables are read (default: `os.environ`).
        **settings: any setting of `ragcli.config.KEYS` (mode, top_k, group, ctx, max_tokens,
            threads, embed_model, model, cache_dir, ...), winning over the environment and the
            config file as a command-line flag does; None means "not given".

    Returns:
        An `Index`; use it as a context manager, or call `close()`.

    Raises:
        UsageError: an unknown setting, or a bad value in an argument, the environment or the
            config file.
    """
    unknown = sorted(set(settings) - SETTING_NAMES)
    if unknown:
        raise UsageError(f"unknown setting {', '.join(unknown)} (known: {', '.join(KEYS)})")
    flags = {name: plain_value(value) for name, value in settings.items()}
    return Index(load_settings(environ, index=path, **flags))


class Index(IndexWrites, Closable):
    """One index with its resolved settings; models load on first need and are reused.

    Args:
        settings: resolved settings (`open_index` makes them).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._searcher: Searcher | None = None
        self._asker: Asker | None = None
        self._embedder: Embedder | None = None
        self._fresh: Embedder | None = None
        self._generator: Generator | None = None
        # QueryOptions made from the same settings and the same plain keyword arguments, reused:
        # building them cost a tenth of a warm BM25 query.
        self._options: dict[tuple, tuple[Settings, QueryOptions]] = {}
        # One call at a time: a searcher's connection, caches and scratch arrays serve one query
        # at a time, and closing it under a running search crashed the process.
        self._lock = threading.RLock()

    @property
    def path(self) -> Path:
        """The index directory."""
        return self.settings.index

    def __repr__(self) -> str:
        return f"<Index {self.path}>"

    def close(self) -> None:
        """Close the open index connections (models stay loaded for reuse); a later call opens
        them again. Waits for a call running on another thread."""
        with self._lock:
            if self._asker is not None:
                self._asker.close()  # its answer cache; the searcher is the one closed below
                self._asker = None
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None

    # -- options --------------------------------------------------------------------------
    def query_options(self, **given: Any) -> "QueryOptions":
        """`QueryOptions` from the settings (mode, top_k, group, rerank_model), overridden by `given`.

        Args:
            **given: any `QueryOptions` field; None means "not given". `filters` may be
                ``key=value`` strings (as `--filter` takes them) or a mapping; enum members
                are taken by value.

        Raises:
            UsageError: an unknown field, a value of the wrong type, or a malformed filter.
        """
        from ragcli.retrieval.search import QueryOptions

        values: dict[str, Any] = {
            "mode": self.settings.get("mode"),
            "top_k": self.settings.get("top_k"),
            "group": self.settings.get("group"),
            "rerank_model": self.settings.get("rerank_model"),
        }
        values.update(query_fields(given))
        return QueryOptions(**values)

    def ask_options(self, query: "QueryOptions | None" = None, **given: Any) -> "AskOptions":
        """`AskOptions` from the settings (ctx, max_tokens, threads and the retrieval ones).

        An answer reads `ASK_TOP_K` chunks unless top_k is given here or set by a settings
        layer (environment, config file, `open_index`).

        Args:
            query: the retrieval options (default: `query_options` of the `QueryOptions`
                fields in `given`; given ones override theirs).
            **given: any `AskOptions` or `QueryOptions` field, or ``doc``; None means "not given".

        Raises:
            UsageError: an unknown field or a value of the wrong type.
        """
        from ragcli.answer.options import AskOptions

        doc = given.pop("doc", None)
        retrieval, asked = ask_fields(given)
        if query is None:
            if retrieval.get("top_k") is None and self.settings.sources.get("top_k") == "default":
                retrieval["top_k"] = ASK_TOP_K
            query = self.query_options(**retrieval)
        elif retrieval:
            query = replace(query, **query_fields(retrieval, "ask"))
        values = {
            name: self.settings.get(key)
            for name, key in _ASK_SETTINGS.items()
            if self.settings.get(key) is not None
        }
        values.update(asked)
        if doc is not None:
            query = self.only_document(query, checked_text(doc, "doc"))
        return AskOptions(query=query, **values)

    def only_document(self, query: "QueryOptions", doc: str) -> "QueryOptions":
        """`query` restricted to one indexed document (``--doc``).

        Raises:
            NotFound: the document is not in the index (the message names it).
        """
        import glob
        from dataclasses import replace

        from ragcli.retrieval.filters import ParsedFilters

        path = self.get(doc).path
        forms = getattr(query.filters, "forms", {})  # how the other keys were written
        return replace(query, filters=ParsedFilters({**query.filters, "path": (glob.escape(path),)}, forms))

    # -- models ---------------------------------------------------------------------------
    def embedder(self, *, fresh: bool = False, notify: Callable[[str], None] | None = None) -> "Embedder":
        """The embedding model: the flag/env/config choice, else the index's own, else the default.

        Args:
            fresh: the chosen model (or the default), not the index's own: what a rebuild embeds with.
            notify: hears about slow first-use steps (an ONNX export), one line each.
        """
        if fresh:
            if self._fresh is None:
                self._fresh = self._load_embedder(None, notify)
            return self._fresh
        if self._embedder is None:
            if self._searcher is not None:
                self._embedder = self._searcher.embedder()
            else:
                from ragcli.store.directory import read_index_meta

                self._embedder = self._load_embedder(
                    read_index_meta(self.path, "embedding_model"),
                    notify,
                    read_index_meta(self.path, "embedding_fingerprint"),
                )
        return self._embedder

    def _load_embedder(
        self, index_model: str | None, notify: Callable[[str], None] | None, fingerprint: str | None = None
    ) -> "Embedder":
        from ragcli.generation.chooser import embedder_for
        from ragcli.stages import stage

        with stage("load embedding model", str(self.settings.embed_model or index_model or "default")):
            return embedder_for(self.settings, index_model, notify=notify, index_fingerprint=fingerprint)

    def generator(self) -> "Generator":
        """The GGUF model for llm retrieval, llm reranking and evaluation, loaded once."""
        if self._generator is None:
            from ragcli.generation.chooser import generator_for

            self._generator = generator_for(self.settings)
        return self._generator

    def searcher(self) -> "Searcher":
        """The open `Searcher` (opened on first use).

        Raises:
            NotIndexed: there is no index yet.
        """
        with self._lock:
            if self._searcher is None:
                from ragcli.retrieval.search import Searcher

                generators, embedder = self.generator, self._embedder
                self._searcher = Searcher(
                    self.path, settings=self.settings, generator_factory=generators, embedder=embedder
                )
            return self._searcher

    def asker(self) -> "Asker":
        """The open `Asker` (opened on first use; it loads the answer model the options name).

        It searches with this index's `searcher()`: one open store and one query embedder
        serve both `search` and `ask`.

        Raises:
            NotIndexed: there is no index yet.
        """
        with self._lock:
            if self._asker is None:
                from ragcli.answer.ask import Asker

                self._asker = Asker(settings=self.settings, searcher=self.searcher())
            return self._asker

    # -- the pipeline (ingest, embed, watch, remove: `ragcli.index_writes.IndexWrites`) ----
    def search(self, query: str, options: "QueryOptions | None" = None, **given: Any) -> list["Hit"]:
        """The best matching chunks, best first (`Searcher.search`).

        Args:
            query: free text.
            options: ready options (default: `query_options(**given)`); `given` overrides them.
            **given: `QueryOptions` fields, e.g. ``mode="bm25", top_k=5, filters=["file_type=pdf"]``.

        Raises:
            NotIndexed, UnknownGroup, UnknownFilter, IndexMismatch, UsageError.
        """
        options = self._query(options, given)
        with self._lock:
            return self.searcher().search(checked_words(query, "query"), options)

    def search_many(
        self, queries: Sequence[str], options: "QueryOptions | None" = None, **given: Any
    ) -> list[list["Hit"]]:
        """`search` for each query, in order; a plain bm25 search runs as one batch
        (`Searcher.search_many`).

        Raises:
            UsageError: `queries` is one string, or holds something that is not a string.
        """
        options = self._query(options, given)
        with self._lock:
            return self.searcher().search_many(checked_queries(queries), options)

    def ask(self, question: str, options: "AskOptions | None" = None, **given: Any) -> "Answer":
        """Answer a question from the index, citing sources (`ragcli.answer.ask.Asker.ask`).

        Args:
            question: the question.
            options: ready options (default: `ask_options(**given)`).
            **given: `AskOptions` or `QueryOptions` fields, e.g. ``answer_style="generative"``.
        """
        options = self._ask(options, given)
        with self._lock:
            return self.asker().ask(checked_words(question, "question"), options)

    def stream(
        self, question: str, options: "AskOptions | None" = None, **given: Any
    ) -> Iterator["str | Answer"]:
        """`ask`, streamed: the answer's text pieces as they come (joined, the answer's text),
        then the final `Answer`.

        The index is held for this answer until the stream ends or is closed; other threads'
        calls wait for it.
        """
        question, options = checked_words(question, "question"), self._ask(options, given)
        self.asker()  # no index: NotIndexed now, not at the first piece
        return self._streamed(question, options)

    def _streamed(self, question: str, options: "AskOptions") -> Iterator["str | Answer"]:
        with self._lock:
            streamed = False
            for piece in self.asker().stream(question, options):
                if not streamed and not isinstance(piece, str) and piece.text:
                    yield piece.text  # an abstention comes whole, with no pieces before it
                streamed = streamed or isinstance(piece, str)
                yield piece

    # -- maintenance ----------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, groups, model, sizes and the last ingest (`ragcli.store.status.index_status`)."""
        from ragcli.ingest.remembered import parse_root_options, stored_entries
        from ragcli.store.status import index_status

        info = index_status(self.path)
        # an index written before groups were remembered side by side gains its `groups` here
        info["root_options"] = stored_entries(parse_root_options(info["root_options"]))
        return info

    def documents(self) -> list[dict[str, Any]]:
        """Every indexed document with its chunk counts per group (`ragcli.store.status.list_documents`)."""
        from ragcli.store.status import list_documents

        return list_documents(self.path)

    def get(self, target: str | Path | None = None, *, chunk: int | None = None) -> "StoredText":
        """A stored document (``PATH`` or ``PATH:PAGE``, in the `group` setting) or one chunk by id.

        Raises:
            NotIndexed, NotFound: no index, or nothing stored under that path or id.
            UsageError: neither a path nor a chunk id, or a chunk id that is not a whole number.
        """
        from ragcli.retrieval.documents import get_chunk, get_document

        if chunk is not None:
            return get_chunk(self.path, checked_value("chunk", chunk, int))
        if target is None:
            raise UsageError("get: give a PATH (or PATH:PAGE) or chunk=ID")
        return get_document(self.path, checked_value("target", target, str), group=self.settings.get("group"))

    def models(self) -> list["ModelEntry"]:
        """Every GGUF model on this machine that `--model NAME` can name (`ragcli.generation.catalog`)."""
        from ragcli.generation.catalog import list_models

        return list_models(self.settings)

    def diagnose(self) -> list["Check"]:
        """Check models, llama.cpp, the index, its integrity, vectors and disk (`ragcli.doctor`)."""
        from ragcli.doctor import diagnose

        return diagnose(self.settings)

    # -- evaluation -----------------------------------------------------------------------
    def evaluate_retrieval(
        self,
        source: str | Path,
        configs: "Sequence[Configuration] | None" = None,
        *,
        index: Path | None = None,
        limit: int | None = None,
        progress: Callable[[str], Any] | None = None,
        store: str | None = None,
    ) -> "RetrievalReport":
        """Score retrieval on a labelled set (`ragcli.evaluation.evaluate_retrieval`).

        Args:
            source: a BEIR folder, a folder with corpus.jsonl and qa.jsonl, or a QA file.
            configs: `ragcli.evaluation.configurations(...)`; default: this index's mode.
            index: the index to run on instead of the dataset's own (a QA file runs on this one).
            limit: only the first `limit` queries.
            progress: opens a progress receiver for a described stage.
            store: the store a dataset's own index is created in (`ingest`'s `store`).
        """
        from ragcli.evaluation import configurations, evaluate_retrieval
        from ragcli.evaluation.retrieval_eval import DEFAULT_TOP_K

        if configs is None:
            base = self.query_options(top_k=DEFAULT_TOP_K)
            configs = configurations([self.settings.get("mode")], base=base)
        group = configs[0].options.group if configs else None
        return evaluate_retrieval(
            Path(source),
            settings=self.settings,
            configs=configs,
            index=index,
            group=group,
            limit=limit,
            progress=progress,
            generator_factory=self.generator,
            store=store,
        )

    def evaluate_answers(
        self,
        source: str | Path,
        configs: "Sequence[AnswerConfiguration] | None" = None,
        *,
        index: Path | None = None,
        limit: int | None = None,
        progress: Callable[[str], Any] | None = None,
    ) -> "AnswerReport":
        """Score answers on a QA set (`evaluate_answers`); the arguments are `evaluate_retrieval`'s."""
        from ragcli.evaluation import answer_configurations, evaluate_answers

        if configs is None:
            base = self.ask_options(use_cache=False)
            configs = answer_configurations([self.settings.get("mode")], base=base)
        return evaluate_answers(
            Path(source), settings=self.settings, configs=configs, index=index, limit=limit, progress=progress
        )

    def generate_qa(
        self, folder: str | Path, *, n: int = 50, seed: int = 0, progress: "Progress | None" = None
    ) -> Iterator[dict[str, Any]]:
        """Synthetic QA records from a folder, made with the GGUF model (`generate_qa`)."""
        from ragcli.evaluation import generate_qa
        from ragcli.generation.chooser import generator_for

        generator = self.generator() if seed == 0 else generator_for(self.settings, seed=seed)
        return generate_qa(Path(folder), generator, n=n, seed=seed, progress=progress)

    # -- helpers --------------------------------------------------------------------------
    def _query(self, options: "QueryOptions | None", given: Mapping[str, Any]) -> "QueryOptions":
        if options is None:
            return self._options_for(given)
        from ragcli.retrieval.search import QueryOptions

        checked_value("options", options, QueryOptions)
        return replace(options, **query_fields(given)) if given else options

    def _options_for(self, given: Mapping[str, Any]) -> "QueryOptions":
        """`query_options(**given)`, remembered while the settings stay the same when every
        value given is a plain str, int, float, bool or None (filters always made afresh)."""
        if "filters" in given:
            return self.query_options(**given)
        for value in given.values():  # a loop: `all(...)` over a generator cost a microsecond
            if not isinstance(value, _PLAIN):
                return self.query_options(**given)
        key = (*given.items(), *map(type, given.values()))  # top_k=True is not top_k=1
        made = self._options.get(key)
        if made is None or made[0] is not self.settings:
            if len(self._options) >= 64:
                self._options.clear()
            made = self._options[key] = (self.settings, self.query_options(**given))
        return made[1]

    def _ask(self, options: "AskOptions | None", given: Mapping[str, Any]) -> "AskOptions":
        if options is None:
            return self.ask_options(**given)
        from ragcli.answer.options import AskOptions

        checked_value("options", options, AskOptions)
        if not given:
            return options
        given = dict(given)
        doc = given.pop("doc", None)
        retrieval, asked = ask_fields(given)
        query = replace(options.query, **query_fields(retrieval, "ask")) if retrieval else options.query
        if doc is not None:
            query = self.only_document(query, checked_text(doc, "doc"))
        return replace(options, query=query, **asked)
