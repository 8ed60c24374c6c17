"""Query rewriting before retrieval, and running several searches as one.

A rewrite turns the question into `SearchRequest`s; `retrieve_all` runs each and fuses the
ranked lists with reciprocal rank fusion (`ragcli.retrieval.fusion.rrf`).

- ``multi`` (RAG-Fusion / multi-query): the model writes N alternative phrasings; the
  question and each alternative are searched with the same options.
- ``hyde`` (Gao et al. 2022, "Precise Zero-Shot Dense Retrieval without Relevance Labels"):
  the model writes a short hypothetical answer, whose embedding searches the dense side
  (a ``dense`` request), next to the question's own search with the asked mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from ragcli.errors import UsageError
from ragcli.choices import REWRITES
from ragcli.generation.llama import Generator, Message
from ragcli.retrieval.fusion import rrf
from ragcli.types import Hit

if TYPE_CHECKING:
    from ragcli.retrieval.search import QueryOptions

MULTI_QUERIES = 3
_MAX_REWRITE_TOKENS = 96
_LIST_MARKER = re.compile(r"^\s*(?:(?:[-*•]|\d+[.)]|query\s*\d*:)\s*)+", re.IGNORECASE)

Search = Callable[[str, "QueryOptions"], list[Hit]]


@dataclass(frozen=True)
class SearchRequest:
    """One search to run: its text, its options, and the name its ranked list is fused under."""

    query: str
    options: "QueryOptions"
    name: str = "question"
    # Whether the text came from the user (or a paraphrase of it): relevance checks compare
    # hits with these, never with an invented HyDE passage.
    is_query: bool = True


def parse_queries(text: str, question: str, n: int) -> list[str]:
    """Alternative queries from the model's reply: one per line, list markers and quotes removed.

    Lines repeating the question or each other (case-insensitively) are dropped; at most `n`.
    """
    seen = {question.strip().casefold()}
    queries: list[str] = []
    for line in text.splitlines():
        query = _LIST_MARKER.sub("", line).strip().strip("\"'“”").strip()
        if len(query) > 2 and query.casefold() not in seen:
            seen.add(query.casefold())
            queries.append(query)
    return queries[:n]


def multi_query_prompt(question: str, n: int) -> list[Message]:
    """Ask for `n` alternative search queries, one per line (for ``--rewrite multi``)."""
    return [
        {
            "role": "system",
            "content": "You rewrite search queries. Reply with the queries only, one per line.",
        },
        {
            "role": "user",
            "content": f"Write {n} different search queries that would find the answer to: {question}",
        },
    ]


def hyde_prompt(question: str) -> list[Message]:
    """Ask for a short hypothetical passage that answers the question (HyDE, Gao et al. 2022)."""
    return [
        {"role": "system", "content": "You write short factual passages."},
        {"role": "user", "content": f"Write a short passage that answers this question: {question}"},
    ]


def multi_queries(question: str, generator: Generator, n: int = MULTI_QUERIES) -> list[str]:
    """Ask the model for `n` alternative search queries."""
    reply = generator.complete(multi_query_prompt(question, n), max_tokens=_MAX_REWRITE_TOKENS)
    return parse_queries(reply, question, n)


def hypothetical_answer(question: str, generator: Generator) -> str:
    """Ask the model for a short passage answering the question (it may be wrong: only its
    wording is used, to find real passages near it)."""
    return generator.complete(hyde_prompt(question), max_tokens=_MAX_REWRITE_TOKENS * 2).strip()


def rewrite(
    question: str, how: str | None, options: "QueryOptions", generator: Callable[[], Generator]
) -> list[SearchRequest]:
    """The searches to run for `question`: just the question, or it plus its rewrites.

    Args:
        question: the user's question.
        how: None, "multi" or "hyde".
        options: retrieval options for the question's own search.
        generator: returns the (lazily loaded) model; not called when `how` is None.

    Raises:
        UsageError: an unknown rewrite name.
    """
    requests = [SearchRequest(question, options)]
    if how is None:
        return requests
    if how == "multi":
        alternatives = multi_queries(question, generator())
        return requests + [SearchRequest(q, options, f"rewrite{i}") for i, q in enumerate(alternatives, 1)]
    if how == "hyde":
        passage = hypothetical_answer(question, generator())
        if not passage:
            return requests
        return requests + [SearchRequest(passage, replace(options, mode="dense"), "hyde", is_query=False)]
    raise UsageError(f"--rewrite {how}: choose one of {', '.join(REWRITES)}")


def retrieve_all(requests: Sequence[SearchRequest], search: Search, *, k: int = 60) -> list[Hit]:
    """Run every request; one request's hits are returned as they are, several are RRF-fused.

    A fused hit keeps the retriever details of its best appearance and records, per request
    name, its rank and score there; its dense cosine is the best one seen in any request.
    """
    results = {
        request.name: tag_retriever(search(request.query, request.options), request.options.mode)
        for request in requests
    }
    if len(results) == 1:
        return next(iter(results.values()))
    return fuse_results(results, k=k)


def tag_retriever(hits: Sequence[Hit], mode: str) -> list[Hit]:
    """Record a single retriever's rank and score in `Hit.sources`, as fused hits already do,
    so later stages (the relevance gate) read a dense cosine the same way in every mode."""
    if mode not in ("bm25", "dense"):
        return list(hits)
    return [
        hit
        if mode in hit.sources
        else replace(hit, sources={**hit.sources, mode: {"rank": hit.rank or rank, "score": hit.score}})
        for rank, hit in enumerate(hits, start=1)
    ]


def fuse_results(results: Mapping[str, Sequence[Hit]], *, k: int = 60) -> list[Hit]:
    """RRF over named hit lists (see `retrieve_all`)."""
    first: dict[int, Hit] = {}
    per_list: dict[int, dict[str, dict[str, float]]] = {}
    for name, hits in results.items():
        for rank, hit in enumerate(hits, start=1):
            first.setdefault(hit.chunk.id, hit)
            per_list.setdefault(hit.chunk.id, {})[name] = {"rank": rank, "score": hit.score}
            _keep_best_dense(per_list[hit.chunk.id], hit)
    fused = rrf({name: [hit.chunk.id for hit in hits] for name, hits in results.items()}, k)
    return [
        Hit(first[cid].chunk, score, rank, {**first[cid].sources, **per_list[cid]})
        for rank, (cid, score) in enumerate(fused, start=1)
    ]


def _keep_best_dense(record: dict[str, dict[str, float]], hit: Hit) -> None:
    dense = hit.sources.get("dense")
    if dense is not None and dense.get("score", -1.0) > record.get("dense", {}).get("score", -1.0):
        record["dense"] = dict(dense)


def reusing(search: Search, query: str, options: "QueryOptions", hits: list[Hit] | None) -> Search:
    """`search`, answering `query` with `options` by the `hits` already found for them (when
    not None) instead of searching again."""
    if hits is None:
        return search

    def reuse(text: str, given: "QueryOptions") -> list[Hit]:
        return list(hits) if text == query and given == options else search(text, given)

    return reuse
