"""Answering a question from the index with a local GGUF model: the `rag ask` pipeline.

The steps of `Asker.stream` (each one a field of `Pipeline`, replaceable by any callable
with the same signature; the ones marked *optional* are skipped when set to None):

1. **Cache**: the same question, options, model file and index state return the stored
   answer at once (`ragcli.answer.cache`; any ingest changes the state).
2. **Rewrite** (only with ``rewrite="multi"|"hyde"``): ``rewrite(question, how, query_options,
   generator_factory) -> [SearchRequest]`` (`ragcli.retrieval.rewrite.rewrite`).
3. **Retrieve**: ``retrieve(requests, search) -> [Hit]`` runs each request through the
   `Searcher` and fuses several with RRF (`ragcli.retrieval.rewrite.retrieve_all`). Each hit is
   widened to whole sentences (`ragcli.answer.edges`). With a reranker
   or a rewrite, ``max(top_k, candidates)`` hits are fetched first.
4. **Rerank** (only when ``query.rerank`` is set): ``rerank(question, hits, query_options,
   generator_factory) -> [Hit]`` (`ragcli.retrieval.rerank.rerank`); hits are then cut to ``top_k``.
Which of the answering steps below run is the answer style: ``auto`` (the default) is
``generative`` for a capable model (`Asker.style`: 0.4B+ parameters in its GGUF header) and
``evidence`` otherwise (the old names extractive, sentence and choice mean evidence).

5. **Gate** (optional): ``gate(queries, hits) -> [Hit]`` keeps the relevant hits
   (`relevant_hits`). When none is left the answer is "I could not find this in your
   documents." with ``abstained=True`` and the model is never called.
6. **Evidence** (``answer_style="evidence"``): ``evidence(question, hits, embedder=, passages=,
   budget=, reader=) -> Evidence``: the passage that answers, quoted and cited, under the
   reader's short line when it has one (`ragcli.answer.evidence.answer_with_evidence`; for a
   question asking for several things, from passages read on into their documents); then
   steps 9-10. No language model is loaded. With ``answer_style="generative"`` steps 6-8 below run.
6. **Build context**: ``build_context(hits, budget=, count_tokens=) -> [Source]`` dedupes,
   merges adjacent chunks, fits ``n_ctx - max_tokens - prompt`` tokens and numbers the
   sources (`ragcli.answer.context.build_context`). Their sentences are scored; when the best is
   weak (``evidence_gate(sentence) -> bool``), the evidence answer (or abstention) is given.
7. **Prompt**: ``prompt(question, sources) -> messages`` (`ragcli.answer.prompting.PROMPTS`), the
   sources cut to their best sentences (`prompt_sentences`) within ``AskOptions.prompt_tokens``.
8. **Generate**: ``generate(generator, messages, options) -> Iterator[str]``; pieces are yielded
   as they come (`stream_answer`), except a reply copying a worked example of the prompt
   (`without_example_copies`) and a short reply only restating the question (`without_echo`).
   The short answer is the reply's first line (`ragcli.answer.prompting.short_answer`); a short
   one is cited to the source its words were copied from and followed by its supporting
   sentence, quoted and cited.
9. **Annotate** (optional): ``annotate(answer, sources) -> (SentenceSupport, ...)``
   (`ragcli.answer.support.annotate_support`).
10. **Finish**: an answer that declines ("not found") is marked ``abstained``; citations
    ``[n]`` naming no source are removed from the text and listed in ``invalid_citations``;
    when the model cites nothing, each sentence's best-supported source (label supported or
    partial) from step 9 is attached instead and ``citations_inferred`` is True.

Example::

    from dataclasses import replace
    from ragcli.answer.ask import Asker
    from ragcli.answer.options import AskOptions
    from ragcli.answer.stages import Pipeline
    from ragcli.config import load_settings

    settings = load_settings()
    pipeline = replace(Pipeline(), annotate=None)          # skip support annotation
    with Asker(settings.index, settings=settings, pipeline=pipeline) as asker:
        print(asker.ask("How do I reset the router?").text)
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ragcli.answer.cache import AnswerCache, cache_key, code_identity, file_identity, index_state
from ragcli.answer.comparison import search_text, side_names
from ragcli.answer.context import Source, build_context, context_budget, prefer_own_files
from ragcli.answer.edges import read_on, whole_sentences
from ragcli.answer.evidence import excerpts, page_of, quoted_under, rank_source_sentences, render
from ragcli.answer.evidence import supporting_sentence
from ragcli.answer.intent import asks_for_several
from ragcli.answer.model_summary import final_prompt
from ragcli.answer.model_summary import prompt_overhead as summary_overhead
from ragcli.answer.options import AskOptions, first_stage, needs_model, resolve_style
from ragcli.answer.prompting import PROMPT_VERSION, parse_citations, prompt_overhead, says_not_found
from ragcli.answer.prompting import short_answer, strip_invalid_citations
from ragcli.answer.qa_reader import reader_for
from ragcli.answer.quoting import agrees, quoted_evidence
from ragcli.answer.readers import Reader
from ragcli.answer.result import Answer
from ragcli.answer.run import STAGE_TIMINGS, AnswerRun
from ragcli.answer.sentences import index_held_terms
from ragcli.answer.stages import Pipeline, is_short_line, prompt_sentences, reply_held_if_short
from ragcli.answer.summary import SummaryCandidates, asks_about_document, document_subject, extractive_summary
from ragcli.answer.summary import file_name_globs, named_documents, summary_candidates
from ragcli.answer.unknown import unknown_names, word_pieces
from ragcli.config import Settings
from ragcli.generation.llama import Generator, Message, check_gguf, load_generator
from ragcli.retrieval.rewrite import SearchRequest, reusing
from ragcli.retrieval.search import QueryOptions, Searcher
from ragcli.types import Closable, Hit

# Hits read for each side of a comparison, besides the question's own (`Asker._side_hits`).
SIDE_HITS = 3

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder

__all__ = ["Answer", "AskOptions", "Asker", "Pipeline"]


class Asker(Closable):
    """Searches the index through one `Searcher` and loads the model once; answers many questions.

    The llm retrieval mode and the llm reranker of a question use the answer model its
    `AskOptions` name (passed to each search), whatever model the searcher was given.

    Args:
        index: the index directory (not needed when `searcher` is given).
        settings: resolved settings (models, cache dir).
        generator: a ready model; None to load the GGUF the options name, on first need.
        pipeline: the stages (default: `Pipeline()`).
        embedder: a loaded query embedder for the searcher this Asker opens (see `Searcher`);
            None loads the index's own.
        searcher: an open `Searcher` to search with (an `Index` passes its own, so searching
            and asking share one store and one embedder); it stays open when the Asker closes.
            None: the Asker opens one on `index` and closes it.

    Raises:
        NotIndexed: there is no index at `index`.
    """

    def __init__(
        self,
        index: Path | None = None,
        *,
        settings: Settings,
        generator: Generator | None = None,
        pipeline: Pipeline | None = None,
        embedder: "Embedder | None" = None,
        searcher: Searcher | None = None,
    ) -> None:
        self.settings = settings
        self.pipeline = pipeline or Pipeline()
        self._injected = generator
        self._loaded: tuple[tuple, Generator] | None = None
        self._active = AskOptions()
        self._owns_searcher = searcher is None
        if searcher is None:
            if index is None:
                raise TypeError("Asker needs an index directory or a searcher")
            searcher = Searcher(Path(index), settings=settings, embedder=embedder)
        self.searcher = searcher
        self._cache: AnswerCache | None = None
        self._state: dict[str, Any] = {}
        self._capable: tuple[tuple, bool] | None = None
        self._readers: dict[str | None, Reader | None] = {}

    def close(self) -> None:
        """Close the answer cache, and the searcher when this Asker opened it."""
        if self._owns_searcher:
            self.searcher.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None  # reopened by the searcher's path, which a closed one refuses

    # -- models ---------------------------------------------------------------------------
    def generator(self, options: AskOptions) -> Generator:
        """The model for `options` (the injected one, else loaded once per model/ctx/threads/seed)."""
        if self._injected is not None:
            return self._injected
        key = (options.model, options.n_ctx, options.threads, options.seed)
        if self._loaded is None or self._loaded[0] != key:
            generator = load_generator(
                options.model, self.settings, n_ctx=options.n_ctx, threads=options.threads, seed=options.seed
            )
            self._loaded = (key, generator)
        return self._loaded[1]

    def _active_generator(self) -> Generator:
        return self.generator(self._active)

    def model_fingerprint(self, options: AskOptions) -> str:
        """Identity of the model file without loading it.

        Raises:
            ModelNotFound: the GGUF file is missing or not GGUF (checked before any retrieval).
        """
        if self._injected is not None:
            injected = self._injected
            return f"{getattr(injected, 'fingerprint', injected.model_id)}:n_ctx={injected.n_ctx}"
        path = check_gguf(self.model_path(options))
        stat = path.stat()
        return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"

    def model_path(self, options: AskOptions) -> Path:
        """The GGUF file the options name (a path or a `rag models` name), else the default."""
        from ragcli.generation.catalog import resolve_model

        return resolve_model(options.model, self.settings)

    def style(self, options: AskOptions) -> str:
        """The answer style to use: ``auto`` becomes generative for a capable model, else evidence.

        Capable is decided from the GGUF header (`ragcli.generation.catalog.is_capable`), never by
        loading the model; an injected generator says so with a true ``capable`` attribute.
        """
        style = resolve_style(options.answer_style)
        if style != "auto":
            return style
        if self._injected is not None:
            return "generative" if getattr(self._injected, "capable", False) else "evidence"
        from ragcli.generation.catalog import is_capable, model_info

        path = self.model_path(options)
        key = (str(path), options.model)
        if self._capable is None or self._capable[0] != key:
            self._capable = (key, is_capable(model_info(path)))
        return "generative" if self._capable[1] else "evidence"

    # -- answering ------------------------------------------------------------------------
    def ask(self, question: str, options: AskOptions = AskOptions()) -> Answer:
        """Answer one question (`stream` without the pieces)."""
        for item in self.stream(question, options):
            if isinstance(item, Answer):
                return item
        raise AssertionError("stream() ended without an Answer")  # pragma: no cover

    def stream(self, question: str, options: AskOptions = AskOptions()) -> Iterator[str | Answer]:
        """Yield the answer's text pieces as generated, then the final `Answer` last.

        Raises:
            ModelNotFound, ContextTooSmall, NotIndexed, UsageError and the retrieval errors.
        """
        from ragcli.text import valid_unicode
        from ragcli.retrieval.search import check_query_length

        check_query_length(question, "question")
        question = valid_unicode(question)  # non-UTF-8 bytes from argv/stdin
        started = time.perf_counter()
        self._active = options
        style = self.style(options)
        # A missing model or reader fails before any retrieval: always when named explicitly.
        named = needs_model(options) or style == "generative" or options.model is not None
        model = self.model_fingerprint(options) if named else "no-model"
        reader = self.reader(options) if style == "evidence" else None
        key = self._cache_key(question, options, model, style) if options.use_cache else None
        cached = self._cache_get(key, started)
        if cached is not None:
            yield cached.text
            yield cached
            return
        run = AnswerRun(question, options, started)
        hits = whole_sentences(self._retrieve(run), self.searcher.store.neighbour_chunks)
        # A keyword-only question loads no embedding model, so reads no coined word as a name.
        pieces = word_pieces(self.searcher.embedder()) if options.query.mode != "bm25" else None
        if not hits or unknown_names(question, hits, self._search, options.query, pieces):
            answer = run.abstain()
        elif asks_about_document(question):
            answer = yield from self._summary(run, hits, style)
        elif style == "evidence":
            answer = self._evidence(run, hits, reader)
            yield answer.text
        else:
            answer = yield from self._generate(run, hits)
        if key is not None:
            self._answer_cache().put(key, answer.to_dict(), state=self._state)
        yield answer

    def _search(self, query: str, options: QueryOptions) -> list[Hit]:
        """`Searcher.search` with the answer model of the question's options for llm mode."""
        return self.searcher.search(query, options, generator_factory=self._active_generator)

    def _retrieve(self, run: AnswerRun) -> list[Hit]:
        stages, options = self.pipeline, run.options
        subject = search_text(document_subject(run.question))
        first, found = self._named_document(subject, run.question, first_stage(options))
        requests = [SearchRequest(subject, first)]
        if options.rewrite is not None:
            requests = stages.rewrite(run.question, options.rewrite, first, self._active_generator)
        run.lap("rewrite")
        hits = stages.retrieve(requests, reusing(self._search, subject, first, found))
        run.lap("retrieve")
        if options.query.rerank is not None and stages.rerank is not None:
            hits = stages.rerank(run.question, hits, options.query, self._active_generator)
        run.retrieved = tuple(hits[: options.query.top_k])
        run.lap("rerank")
        queries = [request.query for request in requests if request.is_query]
        return list(run.retrieved) if stages.gate is None else stages.gate(queries, run.retrieved)

    def _named_document(
        self, subject: str, question: str, query: QueryOptions
    ) -> tuple[QueryOptions, list[Hit] | None]:
        """`query` kept to the document the question names by file name ("the giteveryday page",
        "bread.md") when the index holds one of that name, with the hits of that search (so it
        is not run twice); `query` unchanged and None otherwise or after `--doc`."""
        if "path" in query.filters:
            return query, None
        for name in named_documents(question):
            only = replace(query, filters={**query.filters, "path": file_name_globs(name)})
            hits = self._search(subject, only)
            if hits:
                return only, hits
        return query, None

    def _generate(self, run: AnswerRun, hits: list[Hit]) -> Iterator[str]:
        """Grounded generation: the evidence gate, a prompt of the best sentences, the model's
        answer streamed, then the sentence that supports it, quoted and cited."""
        stages, options = self.pipeline, run.options
        generator = self.generator(options)
        retrieved, hits = hits, hits + self._side_hits(run.question, hits, options.query)
        overhead = prompt_overhead(stages.prompt, run.question, generator.count_tokens)
        budget = context_budget(min(generator.n_ctx, options.n_ctx), options.max_tokens, overhead)
        sources = tuple(stages.build_context(hits, budget=budget, count_tokens=generator.count_tokens))
        # A bm25 question stays lexical (no embedding model is loaded for it).
        embedder = self.searcher.embedder() if options.query.mode != "bm25" else None
        ranked = rank_source_sentences(run.question, sources, embedder=embedder)
        if not ranked or (stages.evidence_gate is not None and not stages.evidence_gate(ranked[0])):
            # The gate reads the best sentence alone; where the evidence answer does (best few), use it.
            answer = self._evidence(run, retrieved, None)
            if not answer.abstained:
                yield answer.text
            return answer
        shown = excerpts(
            sources,
            prompt_sentences(ranked),
            budget=min(budget, options.prompt_tokens),
            count_tokens=generator.count_tokens,
        )
        messages = stages.prompt(run.question, shown)
        run.lap("prompt")
        # A short reply is held, shown only once the evidence under it is known to hold it.
        text, held = yield from reply_held_if_short(run, stages.generate, generator, messages, shown)
        # An empty reply here is a copied example (dropped): the best sentence answers instead.
        if text and says_not_found(text):
            yield from [held] if held else []
            return run.finish(text, sources, generator, stages.annotate)
        cited, _ = parse_citations(text, len(sources))
        # None for only a citation (an invented "[6]" too): the cited source's best sentence answers.
        short = short_answer(strip_invalid_citations(text, len(sources)))
        evidence = supporting_sentence(short or "", ranked, cited)
        cite = ""
        if short and not cited and evidence is not None and evidence.text.lower().find(short.lower()) >= 0:
            # A short answer copied from a source (the factoid prompt asks for the words only):
            # cite the source the words were copied from.
            cite = f" [{evidence.passage + 1}]"
        pages: dict[int, int] = {}
        lines: list[str] = []
        if evidence is not None and (not cited or short is None or is_short_line(short)):
            passages, budget = options.passages, options.evidence_chars
            found = stages.evidence(run.question, hits, embedder=embedder, passages=passages, budget=budget)
            if found.abstained:  # the model's sources hold more than the passages the default reads
                chosen = quoted_under(
                    run.question, sources, ranked, evidence, passages=passages, budget=budget
                )
                lines, page = render(chosen), page_of(sources[evidence.passage], evidence)
                pages = {evidence.passage + 1: page} if page is not None else {}
            else:
                if held and short and not agrees(run.question, short, found):  # its sentence stays quoted
                    held, cite, text, short = "", "", "", None
                lines, sources, pages = quoted_evidence(found, sources, evidence)
        if held or cite:
            yield held + cite
        text += cite
        if lines:
            quoted = ("\n" if text else "") + "\n".join(lines)  # no blank first line after a dropped reply
            yield quoted
            text += quoted
        answer = run.finish(text, sources, generator, stages.annotate)
        return answer if answer.abstained else replace(answer, short=short, pages=pages)

    def _evidence(self, run: AnswerRun, hits: list[Hit], reader: Reader | None) -> Answer:
        """The evidence answer (`ragcli.answer.evidence`): no model runs. For a question asking
        for several things, the passages read are read on into their documents (`read_on`)."""
        options = run.options
        several = options.passages if asks_for_several(run.question) else 0
        hits = read_on(hits, self.searcher.store.neighbour_chunks, several)
        bm25 = self.searcher.retriever("bm25", self.searcher.resolve_group(options.query.group))
        everywhere, unheld = index_held_terms(run.question, bm25.term_shares)
        found = self.pipeline.evidence(
            run.question,
            hits + self._side_hits(run.question, hits, options.query),
            embedder=self.searcher.embedder(),
            passages=options.passages,
            budget=options.evidence_chars,
            reader=reader,
            everywhere=everywhere,
            unheld=unheld,
        )
        run.lap("prompt")
        if found.abstained:
            return run.abstain(found.sources, model="evidence")
        answer = run.finish(found.text, found.sources, None, self.pipeline.annotate)
        return replace(answer, short=found.short, pages=dict(found.pages), model="evidence")

    def _side_hits(self, question: str, hits: list[Hit], query: QueryOptions) -> list[Hit]:
        """For a comparison, the best hits for each side's own name that are not among `hits`:
        the passage describing a side is often not among the question's own hits, whose words
        match a passage naming all sides at once (a table, a summary line)."""
        seen = {hit.chunk.id for hit in hits}
        extra: list[Hit] = []
        # A side's name alone is a plain search: no model selects or reranks its few hits.
        mode = "hybrid" if query.mode == "llm" else query.mode
        side_query = replace(query, mode=mode, top_k=SIDE_HITS, rerank=None)
        for names in side_names(question):
            for hit in self._search(names[0], side_query):
                if hit.chunk.id not in seen:
                    seen.add(hit.chunk.id)
                    extra.append(hit)
        return whole_sentences(extra, self.searcher.store.neighbour_chunks)

    def _summary(self, run: AnswerRun, hits: list[Hit], style: str) -> Iterator[str]:
        """A question about a whole document: the top hit's document, summarised extractively,
        under the model's own summary of it (streamed) in the generative style
        (`ragcli.answer.model_summary`)."""
        first = prefer_own_files(hits)[0].chunk
        store = self.searcher.store
        ids = [row[0] for row in store.document_chunks(first.doc_id, first.group)]
        chunks = store.chunks(ids)
        whole = [Hit(chunk=chunks[i], score=hits[0].score) for i in ids if i in chunks]
        sources = tuple(build_context(whole, budget=10**9, count_tokens=lambda text: 0, max_sources=1))
        embedder = self.searcher.embedder() if run.options.query.mode != "bm25" else None
        candidates = summary_candidates(sources[0], embedder)
        text, _ = extractive_summary(sources[0], embedder, run.options.evidence_chars, candidates)
        run.lap("prompt")
        if not text:
            return run.abstain(sources, model="evidence")
        generator = self.generator(run.options) if style == "generative" else None
        if generator is not None:
            title = str(first.metadata.get("title") or Path(first.path).name)
            messages = self._summary_prompt(generator, run.options, sources[0], title, candidates)
            written = ""
            if messages is not None:
                limits = {"max_tokens": run.options.max_tokens, "temperature": run.options.temperature}
                for piece in generator.stream(messages, **limits):
                    written += piece
                    yield piece
            text = f" [1]\n{text}" if written.strip() else text
            run.lap("generate")
            yield text
            text = written + text
        else:
            yield text
        answer = run.finish(text, sources, generator, self.pipeline.annotate)
        model = "evidence" if generator is None else answer.model
        return replace(answer, citations=(1,), citations_inferred=False, model=model)

    @staticmethod
    def _summary_prompt(
        generator: Generator, options: AskOptions, source: Source, title: str, candidates: SummaryCandidates
    ) -> list[Message] | None:
        """The map step of the model's summary of one whole-document source, and the prompt of
        its last step, within the model's context (`ragcli.answer.model_summary.final_prompt`)."""
        overhead = summary_overhead(generator.count_tokens) + generator.count_tokens(title)
        budget = context_budget(min(generator.n_ctx, options.n_ctx), options.max_tokens, overhead)

        def shorter(chars: int) -> str:
            return "\n\n".join(s.text for s in extractive_summary(source, None, chars, candidates)[1])

        return final_prompt(
            generator, source, title, budget=budget, temperature=options.temperature, shorter=shorter
        )

    def reader(self, options: AskOptions) -> Reader | None:
        """The short line's reader the options name, loaded once.

        Raises:
            ModelNotFound: a reader folder that does not exist or holds no QA model.
        """
        if options.reader not in self._readers:
            self._readers[options.reader] = reader_for(
                options.reader,
                cache_dir=self.settings.cache_dir,
                null_margin=self.settings.get("reader_margin"),
            )
        return self._readers[options.reader]

    # -- cache ----------------------------------------------------------------------------
    def _answer_cache(self) -> AnswerCache:
        if self._cache is None:
            self._cache = AnswerCache(self.searcher.store.path)
        return self._cache

    def _cache_key(self, question: str, options: AskOptions, model: str, style: str) -> str:
        """Everything that changes an answer: question, options (retrieval settings included),
        the style it resolves to, the model and reader files' identity (and the reader's margin),
        the prompt version, the pipeline's stages, ragcli's own code and the index state."""
        self._state = index_state(self.searcher.store)
        normalised = asdict(replace(options, use_cache=True, threads=None, model=None))
        normalised["pipeline"] = self.pipeline.fingerprint()
        normalised["style"] = style
        normalised["prompt_version"] = PROMPT_VERSION
        normalised["code"] = code_identity()
        normalised["reader_file"] = file_identity(options.reader)
        normalised["reader_margin"] = self.settings.get("reader_margin")
        return cache_key(question, normalised, model, self._state)

    def _cache_get(self, key: str | None, started: float) -> Answer | None:
        record = self._answer_cache().get(key) if key is not None else None
        if record is None:
            return None
        elapsed = time.perf_counter() - started
        timings = dict.fromkeys(STAGE_TIMINGS, 0.0) | {"first_token": elapsed, "total": elapsed}
        return replace(Answer.from_dict(record), cached=True, timings=timings)
