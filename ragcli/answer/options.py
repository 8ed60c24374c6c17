"""How to answer one question: `AskOptions`, and what the options decide before any stage runs
(the answer style, whether the model is needed, how deep the first retrieval goes)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ragcli.choices import EVIDENCE_CHARS
from ragcli.choices import ANSWER_STYLES, STYLE_ALIASES
from ragcli.errors import UsageError
from ragcli.retrieval.search import QueryOptions


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


def resolve_style(name: str) -> str:
    """A kept answer style for `name` (an old name maps to the nearest kept one).

    Raises:
        UsageError: an unknown style.
    """
    style = STYLE_ALIASES.get(name, name)
    if style not in ANSWER_STYLES:
        raise UsageError(f"unknown answer style {name!r}: choose one of {', '.join(ANSWER_STYLES)}")
    return style


def needs_model(options: AskOptions) -> bool:
    """Whether answering with these options runs the GGUF model at all (extractive answers
    with keyword retrieval and no rewriting or LLM reranking do not)."""
    return (
        options.answer_style == "generative"
        or bool(options.rewrite)
        or options.query.rerank == "llm"
        or options.query.mode == "llm"
    )


def first_stage(options: AskOptions) -> QueryOptions:
    """Retrieval options before reranking/fusion: deeper lists, no reranker inside the search."""
    query = options.query
    deeper = (query.rerank is not None or options.rewrite is not None) and query.mode != "llm"
    top_k = max(query.top_k, query.candidates) if deeper else query.top_k
    return replace(query, rerank=None, top_k=top_k)
