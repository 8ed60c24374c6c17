"""Second-stage ranking of retrieved hits: cross-encoder, local LLM, keyword filter.

Every reranker follows the `Reranker` protocol and is built by a factory in `RERANKERS`,
keyed by the name the CLI's `--rerank` accepts. `rerank()` is the one call the query
pipeline makes: it applies the keyword filter (`--require`/`--exclude`), then the named
reranker, and returns the best `top_k` hits ranked from 1.

Only the cross-encoder imports torch (through sentence-transformers), and only when one is
asked for.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from ragcli.errors import ModelNotFound, UsageError
from ragcli.generation.llama import TEMPLATE_MARGIN, Generator, Message
from ragcli.analysis import fold
from ragcli.retrieval.model_select import truncate_to_tokens
from ragcli.types import Hit

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

GeneratorFactory = Callable[[], Generator]


class RerankRequest(Protocol):
    """What reranking reads of the query options; `ragcli.retrieval.search.QueryOptions` is one.

    A protocol rather than an import keeps this module below the search orchestration
    that calls it.
    """

    @property
    def rerank(self) -> str | None: ...

    @property
    def rerank_model(self) -> str | None: ...

    @property
    def require(self) -> tuple[str, ...]: ...

    @property
    def exclude(self) -> tuple[str, ...]: ...

    @property
    def top_k(self) -> int: ...


class Reranker(Protocol):
    """Reorders (or filters) hits for a query; returns at most `top_k`, best first."""

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """Return the hits worth keeping, best first."""
        ...


def order_by_scores(scores: Sequence[float | None]) -> list[int]:
    """Indices sorted by descending score; ties keep their original order.

    An item without a score (None) stays at its own position; the scored items are sorted
    into the remaining positions. So one unreadable model answer costs that item nothing.
    """
    slots = [index for index, score in enumerate(scores) if score is not None]
    ranked = sorted(slots, key=lambda index: (-scores[index], index))
    order = list(range(len(scores)))
    for slot, index in zip(slots, ranked):
        order[slot] = index
    return order


def _reorder(hits: Sequence[Hit], scores: Sequence[float | None], source: str, top_k: int) -> list[Hit]:
    """Hits in score order, each scored one taking its new score and a `sources[source]` entry."""
    result: list[Hit] = []
    for rank, index in enumerate(order_by_scores(scores)[:top_k], 1):
        hit, score = hits[index], scores[index]
        if score is not None:
            sources = {**hit.sources, source: {"rank": rank, "score": float(score)}}
            hit = replace(hit, score=float(score), sources=sources)
        result.append(replace(hit, rank=rank))
    return result


# --- cross-encoder ------------------------------------------------------------------------

_HOW_TO_PROVIDE = (
    "pass --rerank-model PATH to a local sentence-transformers CrossEncoder folder, e.g. one "
    "saved with CrossEncoder.save(), or set it for every command and server with "
    "`rag config set rerank_model PATH` or RAG_RERANK_MODEL (no cross-encoder ships with ragcli, "
    "and none is downloaded)"
)


class CrossEncoderReranker:
    """Scores (query, passage) pairs with a sentence-transformers `CrossEncoder`."""

    name = "cross-encoder"

    def __init__(self, model: str | None, *, batch_size: int = 32) -> None:
        """Load the model (offline only).

        Args:
            model: A local CrossEncoder folder, or a Hugging Face id already in the local cache.
            batch_size: Pairs scored per forward pass.

        Raises:
            ModelNotFound: No model was given or it cannot be loaded from local files.
        """
        self._model = load_cross_encoder(model)
        self._batch_size = batch_size

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """Order hits by the cross-encoder's scores, which become the hits' scores."""
        if not hits:
            return []
        pairs = [(query, hit.chunk.text) for hit in hits]
        scores = self._model.predict(pairs, batch_size=self._batch_size, show_progress_bar=False)
        return _reorder(hits, [float(score) for score in scores], self.name, top_k)


def load_cross_encoder(model: str | None) -> CrossEncoder:
    """Load a CrossEncoder from local files, failing fast (no hub access, no torch import on
    the error paths).

    Raises:
        ModelNotFound: With a message saying how to provide a model.
    """
    if not model:
        raise ModelNotFound(f"The cross-encoder reranker needs a model: {_HOW_TO_PROVIDE}.")
    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelNotFound(f"{model} is a file, not a CrossEncoder folder: {_HOW_TO_PROVIDE}.")
        return _load_cross_encoder(str(path.resolve()))
    if _looks_like_path(model) or not _in_hub_cache(model):
        raise ModelNotFound(
            f"No cross-encoder at {model!r} (not a folder, not in the local "
            f"Hugging Face cache): {_HOW_TO_PROVIDE}."
        )
    return _load_cross_encoder(model)


def _looks_like_path(model: str) -> bool:
    # A hub id is "name" or "org/name"; anything else that does not exist is a wrong path.
    return Path(model).is_absolute() or model.startswith((".", "~")) or model.count("/") > 1


def _in_hub_cache(model: str) -> bool:
    """Whether a hub id's config is in the local cache (checked without importing torch)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(model, "config.json"), str)
    except ValueError:  # HFValidationError: not a valid repo id
        return False


@lru_cache(maxsize=2)
def _load_cross_encoder(name_or_path: str) -> CrossEncoder:
    # Cached so a Searcher answering many queries loads the model once.
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as error:
        raise ModelNotFound(
            f"The cross-encoder reranker needs sentence-transformers ({error}); "
            "install it with `pip install 'ragcli[torch]'`."
        ) from error
    try:
        return CrossEncoder(name_or_path, local_files_only=True, device="cpu")
    except (OSError, ValueError, KeyError, RuntimeError) as error:
        raise ModelNotFound(
            f"Could not load a cross-encoder from {name_or_path!r} ({error}): {_HOW_TO_PROVIDE}."
        ) from error


# --- local LLM ----------------------------------------------------------------------------

DIGIT_GRAMMAR = "root ::= [0-9]"
RERANK_SYSTEM = (
    "You rate how useful a passage is for answering a question. Reply with one digit "
    "from 0 (unrelated) to 9 (answers the question directly)."
)
RERANK_QUESTION = "How relevant is the passage to the question? Reply with one digit, 0-9."
MAX_RERANK_PASSAGE_TOKENS = 384
_FIRST_NUMBER = re.compile(r"\d+")


def parse_relevance(text: str) -> float | None:
    """The first number 0-10 in a model's answer, or None when there is none."""
    match = _FIRST_NUMBER.search(text)
    if not match or int(match.group()) > 10:
        return None
    return float(match.group())


class LLMReranker:
    """Asks the local GGUF model for a 0-9 relevance digit per passage (grammar-constrained).

    Hits are sorted by that digit, ties keeping their first-stage order; a hit whose answer
    cannot be read keeps its position and its first-stage score.
    """

    name = "llm-rerank"

    def __init__(self, generator: Generator) -> None:
        self._generator = generator

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """Score every hit with the model and reorder; scores become the model's digits."""
        count = self._generator.count_tokens
        query = truncate_to_tokens(query, self._generator.n_ctx // 4, count)
        frame = count(RERANK_SYSTEM) + count(f"Question: {query}\n\nPassage: \n\n{RERANK_QUESTION}")
        share = min(MAX_RERANK_PASSAGE_TOKENS, self._generator.n_ctx - frame - TEMPLATE_MARGIN - 4)
        scores = [self._score(query, truncate_to_tokens(hit.chunk.text, share, count)) for hit in hits]
        return _reorder(hits, scores, self.name, top_k)

    def _score(self, query: str, passage: str) -> float | None:
        messages: list[Message] = [
            {"role": "system", "content": RERANK_SYSTEM},
            {"role": "user", "content": f"Question: {query}\n\nPassage: {passage}\n\n{RERANK_QUESTION}"},
        ]
        reply = self._generator.complete(messages, max_tokens=2, temperature=0.0, grammar=DIGIT_GRAMMAR)
        return parse_relevance(reply)


# --- keyword filter -----------------------------------------------------------------------


def _normalize(text: str) -> str:
    """Case- and accent-insensitive form: NFKC, casefolded, accents stripped."""
    return fold(unicodedata.normalize("NFKC", text).casefold())


def _is_cjk(char: str) -> bool:
    return unicodedata.name(char, "").startswith(("CJK", "HIRAGANA", "KATAKANA", "HANGUL"))


def _matcher(term: str) -> Callable[[str], bool]:
    """A test for one normalized term: a substring for CJK (no word spaces), else whole words."""
    if any(_is_cjk(char) for char in term):
        return lambda text: term in text
    words = r"\s+".join(re.escape(word) for word in term.split())
    pattern = re.compile(rf"(?<!\w){words}(?!\w)")
    return lambda text: pattern.search(text) is not None


class KeywordFilter:
    """Keeps hits containing every required term and none of the excluded ones (LazyLLM's
    KeywordFilter). Matching ignores case and accents; Latin-script terms match whole words
    (or phrases), CJK terms match as substrings. It filters; it never reorders.
    """

    name = "keyword"

    def __init__(self, require: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        self._require = [_matcher(term) for term in map(_normalize, require) if term.strip()]
        self._exclude = [_matcher(term) for term in map(_normalize, exclude) if term.strip()]

    def keeps(self, text: str) -> bool:
        """Whether a passage passes the filter."""
        text = _normalize(text)
        return all(test(text) for test in self._require) and not any(test(text) for test in self._exclude)

    def rerank(self, query: str, hits: Sequence[Hit], top_k: int) -> list[Hit]:
        """The passing hits in their original order (the first `top_k`)."""
        return [hit for hit in hits if self.keeps(hit.chunk.text)][:top_k]


# --- registry and the pipeline hook -------------------------------------------------------


def _cross_encoder(options: RerankRequest, generator_factory: GeneratorFactory | None) -> Reranker:
    return CrossEncoderReranker(options.rerank_model)


def _llm(options: RerankRequest, generator_factory: GeneratorFactory | None) -> Reranker:
    if generator_factory is None:
        raise UsageError(
            "--rerank llm needs the local GGUF model, but none was made available; "
            "run the query through a Searcher given a generator_factory."
        )
    return LLMReranker(generator_factory())


def _keyword(options: RerankRequest, generator_factory: GeneratorFactory | None) -> Reranker:
    if not (options.require or options.exclude):
        # One message for every front end: the API's and HTTP body's fields, then the CLI's flags.
        raise UsageError(
            "rerank keyword needs words to filter by: give require and/or exclude words "
            "(--require WORD / --exclude WORD on the command line)"
        )
    return KeywordFilter(options.require, options.exclude)


RERANKERS: dict[str, Callable[[RerankRequest, GeneratorFactory | None], Reranker]] = {
    "cross-encoder": _cross_encoder,
    "llm": _llm,
    "keyword": _keyword,
}


def make_reranker(
    name: str, options: RerankRequest, generator_factory: GeneratorFactory | None = None
) -> Reranker:
    """Build the reranker registered under `name`.

    Raises:
        UsageError: `name` is not in `RERANKERS`, or the reranker lacks what it needs.
        ModelNotFound: The reranker's model cannot be loaded.
    """
    factory = RERANKERS.get(name)
    if factory is None:
        choices = ", ".join(sorted(RERANKERS))
        raise UsageError(f"Unknown reranker {name!r}: choose one of {choices}.")
    return factory(options, generator_factory)


def rerank(
    query: str, hits: Sequence[Hit], options: RerankRequest, generator_factory: GeneratorFactory | None = None
) -> list[Hit]:
    """Filter by `options.require`/`options.exclude`, then apply `options.rerank`.

    Call it whenever `options.rerank`, `options.require` or `options.exclude` is set, with the
    `options.candidates` first-stage hits.

    Args:
        query: The user's question.
        hits: First-stage hits, best first.
        options: Uses rerank, rerank_model, require, exclude and top_k.
        generator_factory: Makes (or returns the already loaded) GGUF model for "llm".

    Returns:
        At most `options.top_k` hits, best first, ranked from 1.

    Raises:
        UsageError: Unknown reranker name, or one that lacks what it needs.
        ModelNotFound: The cross-encoder cannot be loaded.
    """
    name = options.rerank
    reranker = make_reranker(name, options, generator_factory) if name else None
    kept = list(hits)
    if options.require or options.exclude:
        kept = KeywordFilter(options.require, options.exclude).rerank(query, kept, len(kept))
    if reranker is not None and not isinstance(reranker, KeywordFilter):
        kept = reranker.rerank(query, kept, options.top_k)
    return [replace(hit, rank=rank) for rank, hit in enumerate(kept[: options.top_k], 1)]
