"""Answering a question from the index with a local GGUF model: the `rag ask` pipeline.

The steps of `Asker.stream` (each one a field of `Pipeline`, replaceable by any callable
with the same signature; the ones marked *optional* are skipped when set to None):

1. **Cache**: the same question, options, model file and index state return the stored
   answer at once (`ragcli.answer.cache`; any ingest changes the state).
2. **Rewrite** (only with ``rewrite="multi"|"hyde"``): ``rewrite(question, how, query_options,
   generator_factory) -> [SearchRequest]`` (`ragcli.retrieval.rewrite.rewrite`).
3. **Retrieve**: ``retrieve(requests, search) -> [Hit]`` runs each request through the
   `Searcher` and fuses several with RRF (`ragcli.retrieval.rewrite.retrieve_all`). With a reranker
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
   reader's short line when it has one (`ragcli.answer.evidence.answer_with_evidence`); then
   steps 9-10. No language model is loaded.
   With ``answer_style="generative"`` steps 6-8 below run instead.
6. **Build context**: ``build_context(hits, budget=, count_tokens=) -> [Source]`` dedupes,
   merges adjacent chunks, fits ``n_ctx - max_tokens - prompt`` tokens and numbers the
   sources (`ragcli.answer.context.build_context`). Their sentences are scored; when the best is
   weak evidence, ``evidence_gate(sentence) -> bool`` abstains without calling the model.
7. **Prompt**: ``prompt(question, sources) -> messages`` (`ragcli.answer.prompting.PROMPTS`), the
   sources cut to their best sentences (`prompt_sentences`) within ``AskOptions.prompt_tokens``.
8. **Generate**: ``generate(generator, messages, options) -> Iterator[str]``; pieces are
   yielded as they come (`stream_answer`), except a reply copying a worked example of the
   prompt (`without_example_copies`). The short answer is the reply's first line
   (`ragcli.answer.prompting.short_answer`); a short one is cited to the source its words were
   copied from and followed by its supporting sentence, quoted and cited.
9. **Annotate** (optional): ``annotate(answer, sources) -> (SentenceSupport, ...)``
   (`ragcli.answer.support.annotate_support`).
10. **Finish**: an answer that declines ("not found") is marked ``abstained``; citations
    ``[n]`` naming no source are removed from the text and listed in ``invalid_citations``;
    when the model cites nothing, each sentence's best-supported source (label supported or
    partial) from step 9 is attached instead and ``citations_inferred`` is True.

Example::

    from dataclasses import replace
    from ragcli.answer.ask import Asker, AskOptions, Pipeline
    from ragcli.config import load_settings

    settings = load_settings()
    pipeline = replace(Pipeline(), annotate=None)          # skip support annotation
    with Asker(settings.index, settings=settings, pipeline=pipeline) as asker:
        print(asker.ask("How do I reset the router?").text)
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from ragcli.answer.cache import AnswerCache, cache_key, file_identity, index_state
from ragcli.choices import ANSWER_STYLES, STYLE_ALIASES
from ragcli.config import Settings
from ragcli.errors import UsageError
from ragcli.answer.context import Source, build_context, context_budget
from ragcli.answer.evidence import EVIDENCE_CHARS, Evidence, answer_with_evidence, excerpts
from ragcli.answer.evidence import is_answerable, page_of, rank_source_sentences, supporting_sentence
from ragcli.answer.evidence import render, select_evidence
from ragcli.answer.qa_reader import reader_for
from ragcli.answer.readers import Reader
from ragcli.answer.summary import asks_about_document, document_subject, extractive_summary
from ragcli.generation.llama import Generator, Message, check_gguf, load_generator
from ragcli.answer.prompting import (
    NOT_FOUND,
    PROMPT_VERSION,
    grounded_prompt,
    parse_citations,
    prompt_overhead,
    says_not_found,
)
from ragcli.answer.prompting import short_answer, strip_invalid_citations, without_citations
from ragcli.retrieval.search import QueryOptions, Searcher
from ragcli.analysis import analyze
from ragcli.retrieval.rewrite import SearchRequest, retrieve_all, rewrite
from ragcli.answer.sentences import Sentence
from ragcli.answer.support import SentenceSupport, annotate_support
from ragcli.answer.unknown import unknown_names
from ragcli.types import Hit

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder

__all__ = ["Answer", "AskOptions", "Asker", "Pipeline", "SentenceSupport", "Source", "relevant_hits"]

# A hit counts as relevant when it shares a content word with the question (what BM25
# matches on) or its dense cosine reaches this. For all-MiniLM-L6-v2, unrelated sentence
# pairs score about 0.0-0.2 and paraphrases 0.5+; 0.3 leaves room for loosely worded questions.
DENSE_RELEVANCE = 0.3
# Words of the question's form, not its topic: sharing only these with a passage is no match.
QUESTION_WORDS = (
    "what which who whom whose when where why how do does did can could should would "
    "i you me my your we our tell explain about please know"
)


@dataclass(frozen=True)
class AskOptions:
    """How to answer one question.

    Attributes:
        query: retrieval settings (mode, top_k, rerank, filters, ...).
        model: GGUF path; None for `Settings.gguf_model`, else the packaged SmolLM2.
        n_ctx: the model's context window (the sources' budget comes out of it).
        max_tokens: answer length limit.
        temperature: sampling temperature (0: greedy, reproducible).
        threads: CPU threads for generation (None: all cores).
        seed: sampling seed.
        rewrite: None, "multi" or "hyde".
        use_cache: look up and store answers in the index's answer cache.
        answer_style: "auto" (generative with a capable model, `ragcli.generation.catalog.is_capable`,
            else evidence), "evidence" (the passage that answers, quoted and cited, under a short
            line where the reader gives one: `ragcli.answer.evidence`) or "generative" (the model
            writes the answer from the best sentences). The old names extractive, sentence and
            choice are taken as evidence.
        passages: how many of the best hits the evidence style reads.
        prompt_tokens: most tokens of source text in a generative prompt (its best sentences),
            so a question costs seconds on a CPU.
        evidence_chars: most characters of quoted evidence in an evidence answer.
        reader: the short line's reader: None or "builtin" (typed spans), "none", or the folder
            of a local extractive QA model (`ragcli.answer.qa_reader.reader_for`).
    """

    query: QueryOptions = field(default_factory=QueryOptions)
    model: str | None = None
    n_ctx: int = 2048
    max_tokens: int = 256
    temperature: float = 0.0
    threads: int | None = None
    seed: int = 0
    rewrite: str | None = None
    use_cache: bool = True
    answer_style: str = "auto"
    passages: int = 3
    prompt_tokens: int = 160
    evidence_chars: int = EVIDENCE_CHARS
    reader: str | None = None


# A generated short answer (this many words at most, not a sentence) gets the evidence quoted
# under it (`quoted_evidence`), as in the evidence style; a model's own sentences stand cited.
SHORT_WORDS = 12
# A generative prompt shows only sentences scoring at least this share of the best one's: on
# qa-tune the gold answer is in such a sentence 98% of the time (as in the best 160 tokens),
# with 3.8 sentences of the best 8 shown instead of all; a 0.5B model copies from
# whatever sentence is nearest the question, so fewer weak sentences mean fewer wrong answers.
PROMPT_SHARE = 0.5


@dataclass(frozen=True)
class Answer:
    """A finished answer with everything needed to check it.

    Attributes:
        question: as asked.
        text: the answer (citations to missing sources removed).
        abstained: True when the documents held nothing relevant or the model declined.
        sources: the numbered context given to the model.
        citations: source numbers cited in `text` (all valid), or inferred (see below).
        support: per-sentence support annotation.
        timings: seconds: rewrite, retrieve, rerank, prompt (context + messages),
            first_token (from the start of the call), generate, total.
        tokens: prompt and completion tokens as the model counted them.
        cached: served from the answer cache.
        retrieved: every hit retrieved before context building (not cached).
        invalid_citations: numbers the model cited that name no source (removed from `text`).
        citations_inferred: the model cited nothing; `citations` come from the support annotation.
        model: the model file name.
        short: the short answer (no citation) when one is shown, else None.
        pages: citation number -> page of the quoted sentence, where it differs from knowing
            only the source's first page (evidence answers).
    """

    question: str
    text: str
    abstained: bool
    sources: tuple[Source, ...] = ()
    citations: tuple[int, ...] = ()
    support: tuple[SentenceSupport, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    tokens: Mapping[str, int] = field(default_factory=dict)
    cached: bool = False
    retrieved: tuple[Hit, ...] = ()
    invalid_citations: tuple[int, ...] = ()
    citations_inferred: bool = False
    model: str = ""
    short: str | None = None
    pages: Mapping[int, int] = field(default_factory=dict)

    def page(self, number: int) -> int | None:
        """The page cited as ``[number]``: the quoted sentence's page, else the source's first."""
        if number in self.pages:
            return self.pages[number]
        source = self.source(number)
        return source.page if source is not None else None

    def source(self, number: int) -> Source | None:
        """The source cited as ``[number]``."""
        return next((source for source in self.sources if source.number == number), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `rag ask --json` (without the envelope)."""
        return {
            "question": self.question,
            "answer": self.text,
            "abstained": self.abstained,
            "model": self.model,
            "short_answer": self.short,
            "citations": [
                {"number": n, "path": s.path, "page": self.page(n)}
                for n in self.citations
                if (s := self.source(n)) is not None
            ],
            "citations_inferred": self.citations_inferred,
            "invalid_citations": list(self.invalid_citations),
            "sources": [asdict(source) for source in self.sources],
            "support": [asdict(item) for item in self.support],
            "timings": {key: round(value, 4) for key, value in self.timings.items()},
            "tokens": dict(self.tokens),
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> "Answer":
        """Rebuild an answer from `to_dict` output (the answer cache's format)."""
        sources = tuple(Source(**{**s, "chunk_ids": tuple(s["chunk_ids"])}) for s in record["sources"])
        return cls(
            question=record["question"],
            text=record["answer"],
            abstained=record["abstained"],
            sources=sources,
            citations=tuple(c["number"] for c in record["citations"]),
            support=tuple(SentenceSupport(**item) for item in record["support"]),
            timings=record["timings"],
            tokens=record["tokens"],
            cached=record["cached"],
            invalid_citations=tuple(record["invalid_citations"]),
            citations_inferred=record["citations_inferred"],
            model=record["model"],
            short=record.get("short_answer"),
            pages={c["number"]: c["page"] for c in record["citations"] if c.get("page") is not None},
        )


def resolve_style(name: str) -> str:
    """A kept answer style for `name` (an old name maps to the nearest kept one).

    Raises:
        UsageError: an unknown style.
    """
    style = STYLE_ALIASES.get(name, name)
    if style not in ANSWER_STYLES:
        raise UsageError(f"unknown answer style {name!r}: choose one of {', '.join(ANSWER_STYLES)}")
    return style


def relevant_hits(queries: Sequence[str], hits: Sequence[Hit]) -> list[Hit]:
    """The hits sharing a content word with a query, or with a dense cosine >= `DENSE_RELEVANCE`."""
    ignored = set(analyze(QUESTION_WORDS))
    terms = {term for query in queries for term in analyze(query)} - ignored
    return [
        hit for hit in hits if terms & set(analyze(hit.chunk.text)) or _dense_score(hit) >= DENSE_RELEVANCE
    ]


def _dense_score(hit: Hit) -> float:
    return float(hit.sources.get("dense", {}).get("score", -1.0))


def needs_model(options: AskOptions) -> bool:
    """Whether answering with these options runs the GGUF model at all (extractive answers
    with keyword retrieval and no rewriting or LLM reranking do not)."""
    return (
        options.answer_style == "generative"
        or bool(options.rewrite)
        or options.query.rerank == "llm"
        or options.query.mode == "llm"
    )


def prompt_sentences(ranked: Sequence[Sentence]) -> list[Sentence]:
    """The ranked sentences worth showing the model: those scoring at least `PROMPT_SHARE` of
    the best one's score (all of them when the best does not score above zero)."""
    best = ranked[0].score if ranked else 0.0
    return [s for s in ranked if s.score >= PROMPT_SHARE * best] if best > 0 else list(ranked)


def without_example_copies(pieces: Iterable[str], messages: Sequence[Message], shown: str) -> Iterator[str]:
    """The generated pieces, except a reply that copies an example reply of the prompt.

    A small model that finds no answer sometimes repeats a worked example's reply (an
    assistant turn before the question). Pieces are held back only while together they could
    still be such a copy; a complete copy not found in the `shown` source text is dropped.
    """
    replies = [m["content"].strip().lower() for m in messages[:-1] if m["role"] == "assistant"]
    held: str | None = "" if replies else None
    for piece in pieces:
        if held is None:
            yield piece
            continue
        held += piece
        start = held.strip().lower()
        if not any(reply.startswith(start) for reply in replies):
            yield held
            held = None
    copied = without_citations(held or "").lower().rstrip(".")
    if held and (copied not in replies or copied in shown):
        yield held


def stream_answer(generator: Generator, messages: Sequence[Message], options: AskOptions) -> Iterator[str]:
    """The default generation stage: stream the model's answer."""
    return generator.stream(messages, max_tokens=options.max_tokens, temperature=options.temperature)


def quoted_evidence(
    question: str,
    sources: Sequence[Source],
    ranked: Sequence[Sentence],
    support: Sentence,
    options: AskOptions,
):
    """The evidence quoted under a generated answer: what the evidence style would quote (the
    best sentences of the first `options.passages` sources, completed), plus the sentence that
    supports the model's words when it is not among them.

    Anchoring the quote on the model's words instead lost answers a model does not put in its
    line (steps, reasons, list items): on the tune half of a real-question set, answered
    0.47 anchored on the model's words, 0.58 anchored as the evidence style."""
    read = [s for s in ranked if s.passage < options.passages] or list(ranked)
    chosen = select_evidence(question, sources, read, options.evidence_chars)
    chosen.add(support)
    return chosen


def rerank_hits(
    question: str, hits: Sequence[Hit], options: QueryOptions, generator_factory: Callable[[], Generator]
) -> list[Hit]:
    """The default rerank stage: `ragcli.retrieval.rerank.rerank` (imported only when reranking)."""
    from ragcli.retrieval.rerank import rerank

    return rerank(question, hits, options, generator_factory=generator_factory)


@dataclass(frozen=True)
class Pipeline:
    """The stages of `Asker` (see the module docstring for each signature)."""

    rewrite: Callable[..., list[SearchRequest]] = rewrite
    retrieve: Callable[..., list[Hit]] = retrieve_all
    rerank: Callable[..., list[Hit]] | None = rerank_hits
    gate: Callable[[Sequence[str], Sequence[Hit]], list[Hit]] | None = relevant_hits
    evidence: Callable[..., Evidence] = answer_with_evidence
    evidence_gate: Callable[..., bool] | None = is_answerable
    build_context: Callable[..., list[Source]] = build_context
    prompt: Callable[[str, Sequence[Source]], list[Message]] = grounded_prompt
    generate: Callable[[Generator, Sequence[Message], AskOptions], Iterator[str]] = stream_answer
    annotate: Callable[[str, Sequence[Source]], tuple[SentenceSupport, ...]] | None = annotate_support

    def fingerprint(self) -> list[str]:
        """Names of the stages, so answers of a customised pipeline are cached apart.

        Stages are known by qualified name (and a `functools.partial` by its arguments too);
        two different lambdas look alike, so pass ``use_cache=False`` while experimenting.
        """
        return [stage_name(getattr(self, stage.name)) for stage in fields(self)]


def stage_name(stage: Any) -> str:
    """A stable name for a stage callable (no memory addresses, so it holds across runs)."""
    if stage is None:
        return "skipped"
    if isinstance(stage, partial):
        return f"{stage_name(stage.func)}{stage.args!r}{sorted(stage.keywords.items())!r}"
    target = stage if hasattr(stage, "__qualname__") else type(stage)
    return f"{target.__module__}.{target.__qualname__}"


def first_stage(options: AskOptions) -> QueryOptions:
    """Retrieval options before reranking/fusion: deeper lists, no reranker inside the search."""
    query = options.query
    deeper = (query.rerank is not None or options.rewrite is not None) and query.mode != "llm"
    top_k = max(query.top_k, query.candidates) if deeper else query.top_k
    return replace(query, rerank=None, top_k=top_k)


class Asker:
    """Opens the index and loads the model once; answers many questions.

    Args:
        index: the index directory.
        settings: resolved settings (models, cache dir).
        generator: a ready model; None to load the GGUF the options name, on first need.
        pipeline: the stages (default: `Pipeline()`).
        embedder: a loaded query embedder to reuse (see `Searcher`); None loads the index's own.

    Raises:
        NotIndexed: there is no index at `index`.
    """

    def __init__(
        self,
        index: Path,
        *,
        settings: Settings,
        generator: Generator | None = None,
        pipeline: Pipeline | None = None,
        embedder: "Embedder | None" = None,
    ) -> None:
        self.settings = settings
        self.pipeline = pipeline or Pipeline()
        self._injected = generator
        self._loaded: tuple[tuple, Generator] | None = None
        self._active = AskOptions()
        self.searcher = Searcher(
            Path(index), settings=settings, generator_factory=self._active_generator, embedder=embedder
        )
        self._cache: AnswerCache | None = None
        self._state: dict[str, Any] = {}
        self._capable: tuple[tuple, bool] | None = None
        self._readers: dict[str | None, Reader | None] = {}

    def __enter__(self) -> "Asker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the index and the answer cache."""
        self.searcher.close()
        if self._cache is not None:
            self._cache.close()

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
        run = _Run(question, options, started)
        hits = self._retrieve(run)
        if not hits or unknown_names(question, hits, self.searcher.search, options.query):
            answer = run.abstain()
        elif asks_about_document(question):
            answer = self._summary(run, hits)
            yield answer.text
        elif style == "evidence":
            answer = self._evidence(run, hits, reader)
            yield answer.text
        else:
            answer = yield from self._generate(run, hits)
        if key is not None:
            self._answer_cache().put(key, answer.to_dict(), state=self._state)
        yield answer

    def _retrieve(self, run: "_Run") -> list[Hit]:
        stages, options = self.pipeline, run.options
        first = first_stage(options)
        requests = [SearchRequest(document_subject(run.question), first)]
        if options.rewrite is not None:
            requests = stages.rewrite(run.question, options.rewrite, first, self._active_generator)
        run.lap("rewrite")
        hits = stages.retrieve(requests, self.searcher.search)
        run.lap("retrieve")
        if options.query.rerank is not None and stages.rerank is not None:
            hits = stages.rerank(run.question, hits, options.query, self._active_generator)
        run.retrieved = tuple(hits[: options.query.top_k])
        run.lap("rerank")
        queries = [request.query for request in requests if request.is_query]
        return list(run.retrieved) if stages.gate is None else stages.gate(queries, run.retrieved)

    def _generate(self, run: "_Run", hits: list[Hit]) -> Iterator[str]:
        """Grounded generation: the evidence gate, a prompt of the best sentences, the model's
        answer streamed, then the sentence that supports it, quoted and cited."""
        stages, options = self.pipeline, run.options
        generator = self.generator(options)
        overhead = prompt_overhead(stages.prompt, run.question, generator.count_tokens)
        budget = context_budget(min(generator.n_ctx, options.n_ctx), options.max_tokens, overhead)
        sources = tuple(stages.build_context(hits, budget=budget, count_tokens=generator.count_tokens))
        # A bm25 question stays lexical (no embedding model is loaded for it).
        embedder = self.searcher.embedder() if options.query.mode != "bm25" else None
        ranked = rank_source_sentences(run.question, sources, embedder=embedder)
        if not ranked or (stages.evidence_gate is not None and not stages.evidence_gate(ranked[0])):
            return run.abstain(sources, model="evidence gate")
        shown = excerpts(
            sources,
            prompt_sentences(ranked),
            budget=min(budget, options.prompt_tokens),
            count_tokens=generator.count_tokens,
        )
        messages = stages.prompt(run.question, shown)
        run.lap("prompt")
        pieces: list[str] = []
        shown_text = " ".join(source.text for source in shown).lower()
        generated = stages.generate(generator, messages, options)
        for piece in without_example_copies(generated, messages, shown_text):
            if not pieces:
                run.timings["first_token"] = time.perf_counter() - run.started
            pieces.append(piece)
            yield piece
        run.lap("generate")
        text = "".join(pieces).strip()
        # An empty reply here is a copied example (dropped): the best sentence answers instead.
        if text and says_not_found(text):
            return run.finish(text, sources, generator, stages.annotate)
        cited, _ = parse_citations(text, len(sources))
        # None for only a citation (an invented "[6]" too): the cited source's best sentence answers.
        short = short_answer(strip_invalid_citations(text, len(sources)))
        evidence = supporting_sentence(short or "", ranked, cited)
        if short and not cited and evidence is not None and evidence.text.lower().find(short.lower()) >= 0:
            # A short answer copied from a source (the factoid prompt asks for the words only):
            # cite the source the words were copied from.
            cite = f" [{evidence.passage + 1}]"
            yield cite
            text += cite
        pages: dict[int, int] = {}
        if evidence is not None and (
            short is None or (len(short.split()) <= SHORT_WORDS and not short.endswith((".", "!", "?")))
        ):
            chosen = quoted_evidence(run.question, sources, ranked, evidence, options)
            quoted = "\n" + "\n".join(render(chosen))
            yield quoted
            text += quoted
            page = page_of(sources[evidence.passage], evidence)
            pages = {evidence.passage + 1: page} if page is not None else {}
        answer = run.finish(text, sources, generator, stages.annotate)
        return answer if answer.abstained else replace(answer, short=short, pages=pages)

    def _evidence(self, run: "_Run", hits: list[Hit], reader: Reader | None) -> Answer:
        """The evidence answer (`ragcli.answer.evidence`): no model runs."""
        options = run.options
        found = self.pipeline.evidence(
            run.question,
            hits,
            embedder=self.searcher.embedder(),
            passages=options.passages,
            budget=options.evidence_chars,
            reader=reader,
        )
        run.lap("prompt")
        if found.abstained:
            return run.abstain(found.sources, model="evidence")
        answer = run.finish(found.text, found.sources, None, self.pipeline.annotate)
        return replace(answer, short=found.short, pages=dict(found.pages), model="evidence")

    def _summary(self, run: "_Run", hits: list[Hit]) -> Answer:
        """A question about a whole document: the top hit's document, summarised extractively."""
        first = hits[0].chunk
        store = self.searcher.store
        ids = [row[0] for row in store.document_chunks(first.doc_id, first.group)]
        chunks = store.chunks(ids)
        whole = [Hit(chunk=chunks[i], score=hits[0].score) for i in ids if i in chunks]
        sources = tuple(build_context(whole, budget=10**9, count_tokens=lambda text: 0, max_sources=1))
        embedder = self.searcher.embedder() if run.options.query.mode != "bm25" else None
        text, _ = extractive_summary(sources[0], embedder, run.options.evidence_chars)
        run.lap("prompt")
        if not text:
            return run.abstain(sources, model="evidence")
        answer = run.finish(text, sources, None, self.pipeline.annotate)
        return replace(answer, citations=(1,), citations_inferred=False, model="evidence")

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
        the prompt version,
        the pipeline's stages and the index state."""
        self._state = index_state(self.searcher.store)
        normalised = asdict(replace(options, use_cache=True, threads=None, model=None))
        normalised["pipeline"] = self.pipeline.fingerprint()
        normalised["style"] = style
        normalised["prompt_version"] = PROMPT_VERSION
        normalised["reader_file"] = file_identity(options.reader)
        normalised["reader_margin"] = self.settings.get("reader_margin")
        return cache_key(question, normalised, model, self._state)

    def _cache_get(self, key: str | None, started: float) -> Answer | None:
        record = self._answer_cache().get(key) if key is not None else None
        if record is None:
            return None
        elapsed = time.perf_counter() - started
        timings = {
            "rewrite": 0.0,
            "retrieve": 0.0,
            "rerank": 0.0,
            "prompt": 0.0,
            "first_token": elapsed,
            "generate": 0.0,
            "total": elapsed,
        }
        return replace(Answer.from_dict(record), cached=True, timings=timings)


class _Run:
    """The state of answering one question: options, clocks and the hits seen so far."""

    def __init__(self, question: str, options: AskOptions, started: float) -> None:
        self.question = question
        self.options = options
        self.started = started
        self.timings: dict[str, float] = {}
        self.retrieved: tuple[Hit, ...] = ()
        self._last = started

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = now - self._last
        self._last = now

    def _totals(self) -> dict[str, float]:
        total = time.perf_counter() - self.started
        self.timings.setdefault("first_token", total)
        return {
            name: self.timings.get(name, 0.0)
            for name in ("rewrite", "retrieve", "rerank", "prompt", "first_token", "generate")
        } | {"total": total}

    def abstain(
        self,
        sources: tuple[Source, ...] = (),
        text: str = NOT_FOUND,
        tokens: Mapping[str, int] | None = None,
        model: str = "",
    ) -> Answer:
        """The answer when nothing relevant was found (or the model declined)."""
        return Answer(
            self.question,
            text,
            True,
            sources,
            timings=self._totals(),
            tokens=dict(tokens or {"prompt": 0, "completion": 0}),
            retrieved=self.retrieved,
            model=model,
        )

    def finish(
        self,
        text: str,
        sources: tuple[Source, ...],
        generator: Generator | None,
        annotate: Callable[..., tuple[SentenceSupport, ...]] | None,
    ) -> Answer:
        """Check citations, annotate support and detect a declined answer (step 10).

        `generator` is None for an extractive answer (no model wrote it).
        """
        tokens = _usage(generator, text) if generator is not None else {"prompt": 0, "completion": 0}
        model_id = generator.model_id if generator is not None else "evidence"
        if generator is not None and says_not_found(text):
            return self.abstain(sources, text.strip() or NOT_FOUND, tokens, model_id)
        citations, invalid = parse_citations(text, len(sources))
        text = strip_invalid_citations(text, len(sources)).strip() if invalid else text.strip()
        support = annotate(text, sources) if annotate is not None else ()
        inferred = not citations
        if inferred:
            citations = _supported_sources(support)
        return Answer(
            self.question,
            text,
            False,
            sources,
            citations,
            support,
            self._totals(),
            tokens,
            retrieved=self.retrieved,
            invalid_citations=invalid,
            citations_inferred=inferred,
            model=model_id,
        )


def _supported_sources(support: Sequence[SentenceSupport]) -> tuple[int, ...]:
    """Each supported or partially supported sentence's best source, in answer order, once."""
    found: list[int] = []
    for item in support:
        if item.label != "unsupported" and item.source is not None and item.source not in found:
            found.append(item.source)
    return tuple(found)


def _usage(generator: Generator, text: str) -> dict[str, int]:
    """Token counts the model reported for its last call, else the completion counted here."""
    usage = getattr(generator, "last_usage", None)
    if usage:
        return {"prompt": int(usage.get("prompt", 0)), "completion": int(usage.get("completion", 0))}
    return {"prompt": 0, "completion": generator.count_tokens(text)}
