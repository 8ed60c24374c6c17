"""Answering queries over an index: `QueryOptions` in, ranked `Hit`s out.

The pipeline of `Searcher.search`:

1. Resolve the group (default "medium", else the index's first) and refuse an empty index.
2. Compile the metadata filters into SQL (an unknown key is an error naming the known ones).
3. Retrieve: bm25 (postings in SQLite, scored with numpy), dense (vector index, the
   index's own embedding model), or hybrid = both fused (by default with per-query weights
   from each list's score spread and top-1 gap, `ragcli.retrieval.fusion.adaptive_fusion`; RRF or fixed
   normalised-score fusion on request);
   llm mode asks a language model to select among hybrid candidates.
4. Drop hits below `min_score` (the retriever's score; the fused score for hybrid), apply
   the keyword filter (`require`/`exclude`) and the reranker through `ragcli.retrieval.rerank.rerank`,
   and cut to `top_k` with ranks from 1.

A `Searcher` opens the index once and loads models lazily, once, so a stream of queries
pays for them a single time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Hashable, Mapping, Sequence

from ragcli.text import valid_unicode
from ragcli.choices import DEFAULT_FUSION, DEFAULT_GROUP, FUSIONS, MAX_QUERY_CHARS, MODES, RERANKERS
from ragcli.config import Settings
from ragcli.errors import IndexMismatch, NotIndexed, UsageError
from ragcli.retrieval import RETRIEVERS
from ragcli.retrieval.base import ChunkFilter, Retriever
from ragcli.retrieval.coverage import coverage_note, splice, splice_hits
from ragcli.retrieval.filters import check_keys
from ragcli.retrieval.fusion import adaptive_fusion, exact_option_weights, feedback_chunk
from ragcli.retrieval.fusion import fuse_hits, scaled_priors
from ragcli.stages import stage
from ragcli.store.chooser import open_backend
from ragcli.store.interface import ClosedBackend
from ragcli.types import Closable, Hit

if TYPE_CHECKING:
    from ragcli.embedding.base import Embedder
    from ragcli.generation.llama import Generator

log = logging.getLogger(__name__)

# Weight of the best fused hit's vector in the default hybrid's second dense pass (Rocchio
# feedback; chosen with the fusion constants on the tune half, benchmarks/fusion_tuning.py).
FEEDBACK_WEIGHT = 0.6


@dataclass(frozen=True)
class QueryOptions:
    """How to answer one query.

    Attributes:
        mode: "bm25", "dense", "hybrid" or "llm".
        top_k: hits returned at most.
        group: chunk group; None for "medium" if present, else the index's first group.
        filters: metadata key -> allowed values (OR within a key, AND across keys).
        min_score: drop hits scoring below this (hybrid: the fused score), before reranking.
        rerank: None, "cross-encoder", "llm" or "keyword".
        rerank_model: model for the reranker (None: its default).
        candidates: hits fetched per retriever before fusion, reranking or llm selection.
        require: words every hit must contain (the keyword filter of `ragcli.retrieval.rerank`).
        exclude: words no hit may contain.
        fusion: "adaptive" (per-query weights, the default), "rrf", or "score" (min-max
            normalised convex combination with fixed weights).
        rrf_k: the RRF constant.
        weights: (bm25, dense) weights for fusion; for "adaptive", multiplied into its priors.
    """

    mode: str = "hybrid"
    top_k: int = 10
    group: str | None = None
    filters: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    min_score: float | None = None
    rerank: str | None = None
    rerank_model: str | None = None
    candidates: int = 50
    require: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    fusion: str = DEFAULT_FUSION
    rrf_k: int = 60
    weights: tuple[float, float] = (1.0, 1.0)


def check_query_length(text: str, what: str = "query") -> None:
    """Refuse a query (or question) longer than `MAX_QUERY_CHARS`, so its memory is bounded.

    Raises:
        UsageError: one line with the length and the limit.
    """
    if len(text) > MAX_QUERY_CHARS:
        raise UsageError(
            f"the {what} is {len(text):,} characters long; the limit is {MAX_QUERY_CHARS:,}: "
            "shorten it to the words that matter"
        )


def validate(options: QueryOptions) -> None:
    """Refuse option values no retriever understands.

    Raises:
        UsageError: names the bad value and the accepted ones.
    """
    # Plain tests first: this runs for every query, and a bad value is rare.
    weights = options.weights
    if (
        options.mode in MODES
        and options.top_k >= 1
        and options.candidates >= 1
        and (options.rerank is None or options.rerank in RERANKERS)
        and options.fusion in FUSIONS
        and options.rrf_k >= 1
        and len(weights) == 2
        and weights[0] >= 0
        and weights[1] >= 0
        and any(weights)
        and (options.group is None or options.group.strip())
    ):
        return
    checks = (
        (
            options.group is None or bool(options.group.strip()),
            f"group '{options.group}': give a group's name, e.g. medium, or leave it out for the default",
        ),
        (options.mode in MODES, f"--mode {options.mode}: choose one of {', '.join(MODES)}"),
        (options.top_k >= 1, f"--top-k {options.top_k}: must be at least 1"),
        (options.candidates >= 1, f"--candidates {options.candidates}: must be at least 1"),
        (
            options.rerank is None or options.rerank in RERANKERS,
            f"--rerank {options.rerank}: choose one of {', '.join(RERANKERS)}",
        ),
        (options.fusion in FUSIONS, f"fusion {options.fusion}: choose one of {', '.join(FUSIONS)}"),
        (options.rrf_k >= 1, f"--rrf-k {options.rrf_k}: must be at least 1"),
    )
    for ok, message in checks:
        if not ok:
            raise UsageError(message)
    raise UsageError(f"--weights {','.join(map(str, weights))}: give two non-negative numbers, e.g. 1,1")


def ranked(hits: Sequence[Hit]) -> list[Hit]:
    """Hits with ranks from 1; a hit already at its rank is kept as is (the common case, and a
    dataclass `replace` per hit cost more than a warm BM25 query's scoring)."""
    return [hit if hit.rank == rank else replace(hit, rank=rank) for rank, hit in enumerate(hits, start=1)]


def default_group(groups: Mapping[str, Any]) -> str:
    """The group a query uses when none is named."""
    if DEFAULT_GROUP in groups or not groups:
        return DEFAULT_GROUP
    return next(iter(groups))


class Searcher(Closable):
    """Opens an index once and answers many queries (models loaded lazily, reused).

    Example::

        with Searcher(settings.index, settings=settings) as searcher:
            hits = searcher.search("router reset", QueryOptions(mode="bm25", top_k=5))
    """

    def __init__(
        self,
        index: Path,
        *,
        settings: Settings,
        generator_factory: Callable[[], Generator] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """Open the index.

        Args:
            index: the index directory.
            settings: resolved settings (embedding model choice, cache dir).
            generator_factory: builds the language model for llm mode and the llm reranker.
            embedder: an already loaded query embedder (checked against the index like a
                loaded one); None loads the index's model on first need.

        Raises:
            NotIndexed: there is no index at `index`.
        """
        self.store = open_backend(Path(index))
        self.settings = settings
        self._generator_factory = generator_factory
        self._generator: Generator | None = None
        self._embedder: Embedder | None = None
        self._given_embedder = embedder
        self._retrievers: dict[tuple[str, str], Retriever] = {}
        self._filter_keys: list[str] | None = None
        self._noted: set[str] = set()  # coverage lines already said (once per searcher)
        # Groups resolved at one store version: two reads a query saved while nothing changes.
        self._resolved: dict[str | None, str] = {}
        self._resolved_at: Hashable | None = None

    def close(self) -> None:
        """Close the index; a later use raises `IndexClosed`."""
        self.store.close()
        self.store = ClosedBackend(self.store.path)
        self.refresh()

    def refresh(self) -> None:
        """Forget what was read from the index (retrievers, vectors, filter keys) after another
        process changed it; the loaded models stay."""
        self._retrievers.clear()
        self._filter_keys = None
        self._resolved.clear()

    # -- models ---------------------------------------------------------------------------
    def embedder(self) -> Embedder:
        """The query embedder: the index's own model, checked against the stored fingerprint.

        Raises:
            IndexMismatch: the chosen model (flag or environment) is not the index's.
        """
        if self._embedder is None:
            from ragcli.generation.chooser import embedder_for

            index_model = self.store.get_meta("embedding_model")
            embedder = self._given_embedder
            if embedder is None:
                with stage("load embedding model", str(self.settings.embed_model or index_model)):
                    embedder = embedder_for(
                        self.settings,
                        index_model,
                        index_fingerprint=self.store.get_meta("embedding_fingerprint"),
                    )
            stored = self.store.get_meta("embedding_fingerprint")
            if stored is not None and stored != embedder.fingerprint:
                raise IndexMismatch(
                    f"the index at {self.store.path} was built with embedding model {index_model}, "
                    f"not {embedder.model_id}: query without --embed-model/$RAG_EMBED_MODEL, or rebuild "
                    f"it with `rag ingest --rebuild --embed-model {embedder.model_id}`"
                )
            self._embedder = embedder
        return self._embedder

    def generator(self) -> Generator:
        """The language model for llm mode and the llm reranker, built once."""
        if self._generator is None:
            if self._generator_factory is None:
                raise UsageError("this mode needs a language model, but none was configured")
            self._generator = self._generator_factory()
        return self._generator

    # -- search ---------------------------------------------------------------------------
    def resolve_group(self, group: str | None) -> str:
        """The group to search; refuses unknown groups and empty indexes.

        Raises:
            UnknownGroup: the group does not exist.
            NotIndexed: the index (or group) holds no chunks.
        """
        version = self.store.version()
        known = self._resolved.get(group) if version is not None and version == self._resolved_at else None
        if known is not None:  # nothing changed since this group was last resolved
            return known
        groups = self.store.groups()
        name = group or default_group(groups)
        if groups and name not in groups:
            self.store.group(name)  # raises UnknownGroup, naming the known ones
        if not groups or not self.store.has_chunks(name):
            where = f" (group '{name}')" if group else ""
            raise NotIndexed(f"the index at {self.store.path} is empty{where}: run `rag ingest DIR` first")
        if version != self._resolved_at:
            self._resolved, self._resolved_at = {}, version
        self._resolved[group] = name
        return name

    def compile_filters(self, filters: Mapping[str, tuple[str, ...]]) -> ChunkFilter | None:
        """Validate filter keys against the index and compile them for its store.

        Raises:
            UnknownFilter: a key no document carries.
        """
        if not filters:
            return None
        if self._filter_keys is None:
            self._filter_keys = self.store.filter_keys()
        check_keys(filters, self._filter_keys)
        return self.store.compile_filter(filters)

    def retriever(self, name: str, group: str) -> Retriever:
        """A retriever of the group, built once per searcher."""
        key = (name, group)
        if key not in self._retrievers:
            self._retrievers[key] = RETRIEVERS[name](self.store, group, self.embedder)
        return self._retrievers[key]

    def search(
        self,
        query: str,
        options: QueryOptions = QueryOptions(),
        *,
        generator_factory: Callable[[], Generator] | None = None,
    ) -> list[Hit]:
        """Answer one query.

        Args:
            query: free text.
            options: mode, filters, cut-offs, reranking.
            generator_factory: the language model of this call's llm mode and llm reranker
                (an `Asker` passes the answer model its options name); None: the searcher's own.

        Returns:
            Up to `options.top_k` hits, best first, rank from 1.

        Raises:
            UsageError, NotIndexed, UnknownGroup, UnknownFilter, IndexMismatch.
        """
        check_query_length(query)
        query = valid_unicode(query)  # non-UTF-8 bytes from argv/stdin must not reach the tokenizer
        validate(options)
        if options.mode != "bm25" or options.rerank is not None:
            return self._search(query, options, generator_factory)
        hits = self._bm25_from_memory(query, options)
        if hits is None:  # one read snapshot for the group check and the postings: the first
            with self.store.snapshot():  # read of a snapshot costs about 4 µs, the later ones 1 µs
                hits = self._search(query, options, generator_factory)
        return hits

    def _bm25_from_memory(self, query: str, options: QueryOptions) -> list[Hit] | None:
        """A plain warm bm25 search from what was kept at the store's current version (the group
        here, postings and chunks in `BM25Retriever.search_cached`): one read of the version, no
        transaction, the answer a snapshot would give; None when something must be read."""
        if options.filters or options.require or options.exclude:
            return None
        version = self.store.version()
        known = version is not None and version == self._resolved_at
        group = self._resolved.get(options.group) if known else None
        search_cached = getattr(self._retrievers.get(("bm25", group)), "search_cached", None)
        if search_cached is None:  # not resolved at this version, not built, or it keeps nothing
            return None
        with stage("bm25 retrieve"):
            hits = search_cached(query, options.top_k, version)
        if hits is None:
            return None
        log.info("index %s, group %s, mode %s, top %d", self.store.path, group, options.mode, options.top_k)
        return self._cut(hits, options)

    def _search(
        self, query: str, options: QueryOptions, generator: Callable[[], Generator] | None = None
    ) -> list[Hit]:
        group = self.resolve_group(options.group)
        log.info("index %s, group %s, mode %s, top %d", self.store.path, group, options.mode, options.top_k)
        allowed = self.compile_filters(options.filters)
        wide = options.rerank is not None or options.mode == "llm" or bool(options.require or options.exclude)
        fetch = max(options.top_k, options.candidates) if wide else options.top_k
        hits = self._retrieve(query, options, group, allowed, fetch)
        if options.mode == "bm25" and not wide and options.min_score is None and len(hits) <= fetch:
            return hits  # ranked from 1 by the retriever: nothing below changes them
        if options.min_score is not None:
            hits = [hit for hit in hits if hit.score >= options.min_score]
        keywords = bool(options.require or options.exclude)
        generator = generator or self.generator
        if options.mode == "llm":
            from ragcli.retrieval.model_select import select

            if keywords:  # filter before the model reads the candidates
                hits = self._rerank(query, hits, replace(options, rerank=None, top_k=len(hits) or 1))
            with stage("llm select"):
                hits = select(query, hits, generator(), options.top_k)
        if options.rerank is not None or keywords:
            with stage("rerank", options.rerank or "keywords"):
                hits = self._rerank(query, hits, options, generator)
        return ranked(hits[: options.top_k])

    def search_many(self, queries: Sequence[str], options: QueryOptions = QueryOptions()) -> list[list[Hit]]:
        """`search` for each query, in order, with the same results.

        A plain bm25 search (no reranking, keyword filter or llm selection) is answered in one
        batch (`BM25Retriever.search_many`: one snapshot, one read of the hit chunks); any
        other search runs query by query.

        Raises:
            UsageError, NotIndexed, UnknownGroup, UnknownFilter, IndexMismatch.
        """
        if options.mode != "bm25" or options.rerank is not None or options.require or options.exclude:
            return [self.search(query, options) for query in queries]
        for query in queries:
            check_query_length(query)
        validate(options)
        with self.store.snapshot():
            return self._search_batch(queries, options)

    def _search_batch(self, queries: Sequence[str], options: QueryOptions) -> list[list[Hit]]:
        group = self.resolve_group(options.group)
        count = len(queries)
        log.info("index %s, group %s, bm25 batch of %d, top %d", self.store.path, group, count, options.top_k)
        allowed = self.compile_filters(options.filters)
        with stage("bm25 retrieve", f"{count} queries"):
            found = self.retriever("bm25", group).search_many(
                [valid_unicode(query) for query in queries], options.top_k, allowed
            )
        return [self._cut(hits, options) for hits in found]

    @staticmethod
    def _cut(hits: list[Hit], options: QueryOptions) -> list[Hit]:
        """`min_score`, then ranks from 1 (what `search` does after a plain retrieve)."""
        if options.min_score is None and len(hits) <= options.top_k:
            return hits  # the retriever's hits, already ranked from 1
        if options.min_score is not None:
            hits = [hit for hit in hits if hit.score >= options.min_score]
        return ranked(hits[: options.top_k])

    def _rerank(
        self,
        query: str,
        hits: list[Hit],
        options: QueryOptions,
        generator: Callable[[], Generator] | None = None,
    ) -> list[Hit]:
        from ragcli.retrieval.rerank import rerank

        return rerank(query, hits, options, generator_factory=generator or self.generator)

    def _retrieve(
        self, query: str, options: QueryOptions, group: str, allowed: ChunkFilter | None, fetch: int
    ) -> list[Hit]:
        if options.mode in ("bm25", "dense"):
            with stage(f"{options.mode} retrieve"):
                hits = self.retriever(options.mode, group).search(query, fetch, allowed)
            if options.mode == "dense" and self._partly_embedded(group):
                with stage("bm25 retrieve", "chunks without a vector"):
                    bm25 = self.retriever("bm25", group).search(query, fetch, allowed)
                hits = splice_hits(hits, bm25, self._without_vectors(bm25))[:fetch]
            return hits
        # Fusion works best with deeper lists than the final cut.
        depth = max(fetch, options.candidates)
        weights = dict(zip(("bm25", "dense"), options.weights))
        if options.fusion != "adaptive":
            results = {}
            for name in ("bm25", "dense"):
                with stage(f"{name} retrieve"):
                    results[name] = self.retriever(name, group).search(query, depth, allowed)
            if self._partly_embedded(group):
                unembedded = self._without_vectors(results["bm25"])
                results["dense"] = splice_hits(results["dense"], results["bm25"], unembedded)
            with stage("fuse", options.fusion):
                return fuse_hits(results, fusion=options.fusion, k=options.rrf_k, weights=weights)[:fetch]
        return self._adaptive_hybrid(query, group, allowed, depth, weights)[:fetch]

    def _adaptive_hybrid(
        self, query: str, group: str, allowed: ChunkFilter | None, depth: int, weights: Mapping[str, float]
    ) -> list[Hit]:
        """Fuse, move the dense query toward the best fused hit, search dense again, fuse again.

        The feedback step (`DenseRetriever.search_feedback`) is what lifts Cranfield most (README
        "Hybrid fusion"); it needs no second embedding, only one more vector search.
        """
        with stage("bm25 retrieve"):
            bm25 = self.retriever("bm25", group).search(query, depth, allowed)
        weights = exact_option_weights(query, bm25, weights)
        dense = self.retriever("dense", group)
        if not query.strip():
            return fuse_hits({"bm25": bm25, "dense": []}, fusion="adaptive", weights=weights)
        vector = dense.embed(query)
        known = {hit.chunk.id: hit.chunk for hit in bm25}
        with stage("dense retrieve"):
            first = dense.rank_vector(vector, depth, allowed)
        # Chunks not embedded yet take their BM25 rank in the dense lists (`ragcli.retrieval.coverage`).
        unembedded = self._without_vectors(bm25) if self._partly_embedded(group) else set()
        if unembedded:
            first = splice(first, [hit.chunk.id for hit in bm25], unembedded)
        # The first fusion only picks the feedback chunk, so it runs on ids, building no hits.
        with stage("fuse", "adaptive, first pass"):
            fused, first_weights = adaptive_fusion(
                {"bm25": [(h.chunk.id, h.score) for h in bm25], "dense": first},
                priors=scaled_priors(("bm25", "dense"), weights),
            )
        refined: list[Hit] = []
        with stage("dense feedback"):
            if fused and weights.get("dense", 1.0) and FEEDBACK_WEIGHT > 0:
                chosen = [feedback_chunk(fused, first, first_weights["dense"])]
                refined = dense.search_feedback(vector, chosen, depth, allowed, FEEDBACK_WEIGHT, known)
            if not refined:  # nothing found, dense switched off, or the best hit has no vector
                refined = dense.search_vector(vector, depth, allowed, known)
        if unembedded:
            refined = splice_hits(refined, bm25, unembedded)
        with stage("fuse", "adaptive, second pass"):
            return fuse_hits({"bm25": bm25, "dense": refined}, fusion="adaptive", weights=weights)

    def _partly_embedded(self, group: str) -> bool:
        """Whether some of the group's chunks have no vector yet; says so on stderr (a warning
        record) once per searcher, e.g. `dense covers 41% of chunks; the rest by BM25 only`."""
        embedded, total = self.store.embedding_coverage(group)
        note = coverage_note(embedded, total)
        if note is None:
            return False
        if note not in self._noted:
            self._noted.add(note)
            log.warning("%s", note)
        return True

    def _without_vectors(self, hits: Sequence[Hit]) -> set[int]:
        return self.store.without_vectors([hit.chunk.id for hit in hits]) if hits else set()
