"""The default stages of `ragcli.answer.ask.Asker`, gathered in `Pipeline` (each one
replaceable by any callable with the same signature; see `ragcli.answer.ask`)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, fields
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Sequence

from ragcli.analysis import analyze
from ragcli.answer.context import Source, build_context
from ragcli.answer.evidence import Evidence, answer_with_evidence, is_answerable
from ragcli.answer.options import AskOptions
from ragcli.answer.prompting import grounded_prompt, without_citations
from ragcli.answer.sentences import Sentence
from ragcli.answer.support import SentenceSupport, annotate_support
from ragcli.generation.llama import Generator, Message
from ragcli.retrieval.rewrite import SearchRequest, retrieve_all, rewrite
from ragcli.retrieval.search import QueryOptions
from ragcli.types import Hit

# A hit counts as relevant when it shares a content word with the question (what BM25
# matches on) or its dense cosine reaches this. For all-MiniLM-L6-v2, unrelated sentence
# pairs score about 0.0-0.2 and paraphrases 0.5+; 0.3 leaves room for loosely worded questions.
DENSE_RELEVANCE = 0.3
# Words of the question's form, not its topic: sharing only these with a passage is no match.
QUESTION_WORDS = (
    "what which who whom whose when where why how do does did can could should would "
    "i you me my your we our tell explain about please know"
)


# A generated short answer (this many words at most, not a sentence) gets the evidence quoted
# under it (`ragcli.answer.evidence.quoted_under`), as in the evidence style, and so does a reply
# citing no source (a small model's sentence is often the question restated); a model's own
# cited sentences stand. With Qwen2.5-Coder-0.5B on docs-qa, quoting under uncited sentences
# too: tune 0.61 -> 0.66 answered, report 0.46 -> 0.49.
SHORT_WORDS = 12


def is_short_line(text: str) -> bool:
    """A generated reply that is a short line, not a sentence (`SHORT_WORDS`)."""
    return len(text.split()) <= SHORT_WORDS and not text.endswith((".", "!", "?"))


# A generative prompt shows only sentences scoring at least this share of the best one's: on
# qa-tune the gold answer is in such a sentence 98% of the time (as in the best 160 tokens),
# with 3.8 sentences of the best 8 shown instead of all; a 0.5B model copies from
# whatever sentence is nearest the question, so fewer weak sentences mean fewer wrong answers.
PROMPT_SHARE = 0.5


def relevant_hits(queries: Sequence[str], hits: Sequence[Hit]) -> list[Hit]:
    """The hits sharing a content word with a query, or with a dense cosine >= `DENSE_RELEVANCE`."""
    ignored = set(analyze(QUESTION_WORDS))
    terms = {term for query in queries for term in analyze(query)} - ignored
    return [
        hit for hit in hits if terms & set(analyze(hit.chunk.text)) or _dense_score(hit) >= DENSE_RELEVANCE
    ]


def _dense_score(hit: Hit) -> float:
    return float(hit.sources.get("dense", {}).get("score", -1.0))


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


# A question offering a choice ("X or Y?", "X vs Y") is answered by words it holds itself.
_CHOICE = re.compile(r"\b(?:or|vs|versus)\b", re.IGNORECASE)


def echoes_question(reply: str, question: str) -> bool:
    """Whether a short reply only restates the question: its content words (there are some, so
    "no" is an answer) all occur in the question, and the question offers no choice."""
    if len(reply.split()) > SHORT_WORDS or _CHOICE.search(question):
        return False
    words = set(analyze(without_citations(reply)))
    return bool(words) and words <= set(analyze(question))


def without_echo(pieces: Iterable[str], question: str) -> Iterator[str]:
    """The generated pieces, except a short reply that only restates the question ("what is
    the reflog?" -> "reflog"): the evidence quoted under it answers alone. Pieces are held
    back only while together they are short enough to be one (`SHORT_WORDS`)."""
    held: str | None = ""
    for piece in pieces:
        if held is None:
            yield piece
            continue
        held += piece
        if len(held.split()) > SHORT_WORDS:
            yield held
            held = None
    if held and not echoes_question(held.strip(), question):
        yield held


def reply_held_if_short(
    run: Any,
    generate: Callable[..., Iterator[str]],
    generator: Generator,
    messages: list[Message],
    shown: list[Source],
) -> Iterator[str]:
    """Stream the model's reply (`generate`, then the filters above), except a short one:
    `without_echo` gives a short reply whole, as its only piece, and it is returned as held,
    not yielded, to be shown only once the evidence under it is known to hold it.
    Returns (the reply's text, the held piece or "")."""
    pieces: list[str] = []
    held = ""
    shown_text = " ".join(source.text for source in shown).lower()
    generated = generate(generator, messages, run.options)
    for piece in without_echo(without_example_copies(generated, messages, shown_text), run.question):
        if not pieces:
            run.timings["first_token"] = time.perf_counter() - run.started
            held = piece if len(piece.split()) <= SHORT_WORDS else ""
        pieces.append(piece)
        if not held:
            yield piece
    run.lap("generate")
    return "".join(pieces).strip(), held


def stream_answer(generator: Generator, messages: Sequence[Message], options: AskOptions) -> Iterator[str]:
    """The default generation stage: stream the model's answer."""
    return generator.stream(messages, max_tokens=options.max_tokens, temperature=options.temperature)


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
