"""`rag ask`: answer a question from the index with the local GGUF model, citing sources."""

from __future__ import annotations

import sys
from typing import Annotated, Iterable, Optional

import typer

from ragcli.choices import ANSWER_STYLES, EVIDENCE_CHARS, REWRITES, STYLE_ALIASES
from ragcli.arguments import CommandLineFilters
from ragcli.cli.options import (
    CandidatesOption,
    EmbedModelOption,
    ExcludeOption,
    FiltersOption,
    Fusion,
    FusionOption,
    GroupOption,
    IndexOption,
    MinScoreOption,
    Mode,
    RequireOption,
    RerankModelOption,
    RerankOption,
    WeightsOption,
    choice_enum,
    parse_weights,
)
from ragcli.cli.stdin import stdin_lines
from ragcli.places import cited_place
from ragcli.cli.render import (
    SCHEMA_VERSION,
    document_text,
    emit_json,
    emit_jsonl,
    printable,
    stderr_console,
    stdout_console,
    terminal_text,
)

SUPPORT_STYLES = {"supported": "green", "partial": "yellow", "unsupported": "red"}


def _answer_style(value: Optional[str]) -> Optional[str]:
    """--answer-style: a listed style, or an old name (accepted, not listed)."""
    if value is not None and value not in ANSWER_STYLES and value not in STYLE_ALIASES:
        raise typer.BadParameter(f"{value!r}: choose one of {', '.join(ANSWER_STYLES)}")
    return value


def _complete_style(incomplete: str) -> list[str]:
    return [style for style in ANSWER_STYLES if style.startswith(incomplete)]


Rewrite = choice_enum("Rewrite", REWRITES)


def ask(
    question: Annotated[
        Optional[str],
        typer.Argument(
            metavar="QUESTION",
            help="The question; '-' (or no QUESTION with a pipe) reads one question per line "
            "from stdin and answers each as a JSON line.",
            show_default=False,
        ),
    ] = None,
    mode: Annotated[
        Optional[Mode],
        typer.Option(
            "--mode",
            "-m",
            help="Retrieval: bm25, dense, hybrid or llm (as in `rag query`). Default: "
            "$RAG_MODE / config, else hybrid.",
            show_default=False,
        ),
    ] = None,
    top_k: Annotated[
        Optional[int],
        typer.Option(
            "--top-k",
            "-k",
            min=1,
            help="Chunks retrieved for the context (before merging and the token "
            "budget). Default: $RAG_TOP_K / config, else 5.",
            show_default=False,
        ),
    ] = None,
    group: GroupOption = None,
    filters: FiltersOption = None,
    min_score: MinScoreOption = None,
    rerank: RerankOption = None,
    rerank_model: RerankModelOption = None,
    candidates: CandidatesOption = 50,
    require: RequireOption = None,
    exclude: ExcludeOption = None,
    fusion: FusionOption = Fusion.adaptive,
    weights: WeightsOption = None,
    answer_style: Annotated[
        Optional[str],
        typer.Option(
            "--answer-style",
            metavar="[" + "|".join(ANSWER_STYLES) + "]",
            callback=_answer_style,
            autocompletion=_complete_style,
            help="auto: generative with a capable model (0.4B+ parameters, see `rag models`), "
            "else evidence; evidence: the passage that answers, quoted and cited, under a short "
            "line for a name, date or number where one is clear (no model runs); generative: the "
            "GGUF model writes the answer. Default: $RAG_ANSWER_STYLE / config, else auto.",
            show_default=False,
        ),
    ] = None,
    reader: Annotated[
        Optional[str],
        typer.Option(
            "--reader",
            help="What gives the short line of an evidence answer: builtin (names, dates, numbers), "
            "none, or the folder of a local extractive QA model (BERT-family, SQuAD-tuned). "
            "Default: $RAG_READER / config, else builtin.",
            show_default=False,
        ),
    ] = None,
    evidence_chars: Annotated[
        Optional[int],
        typer.Option(
            "--evidence-chars",
            min=1,
            help="Most characters of quoted evidence in an evidence answer (a longer list or "
            f"procedure is cut and says so). Default: $RAG_EVIDENCE_CHARS / config, else {EVIDENCE_CHARS}.",
            show_default=False,
        ),
    ] = None,
    doc: Annotated[
        Optional[str],
        typer.Option(
            "--doc",
            help="Answer from this one indexed document only (its path as `rag ls` shows it, or "
            "relative to the current folder).",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        Optional[str],
        typer.Option(
            help="GGUF model file or a name `rag models` lists (default: $RAG_MODEL, else the packaged "
            "SmolLM2-135M-Instruct).",
            show_default=False,
        ),
    ] = None,
    ctx: Annotated[
        Optional[int],
        typer.Option(
            "--ctx",
            min=128,
            help="Model context window in tokens; the sources get what the prompt and "
            "--max-tokens leave. Default: $RAG_CTX / config, else 2048.",
            show_default=False,
        ),
    ] = None,
    max_tokens: Annotated[
        Optional[int],
        typer.Option(
            min=1,
            help="Longest answer, in tokens. Default: $RAG_MAX_TOKENS / config, else 256.",
            show_default=False,
        ),
    ] = None,
    temperature: Annotated[
        float, typer.Option(min=0.0, help="Sampling temperature (0: greedy, reproducible).")
    ] = 0.0,
    threads: Annotated[
        Optional[int],
        typer.Option(
            min=1, help="CPU threads. Default: $RAG_THREADS / config, else all cores.", show_default=False
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    rewrite: Annotated[
        Optional[Rewrite],
        typer.Option(
            help="Rewrite the question first: multi (the model writes alternative queries, results fused) or "
            "hyde (search with the embedding of a hypothetical answer).",
            show_default=False,
        ),
    ] = None,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache/--no-cache",
            help="Reuse and store answers, cached per question, settings and index state "
            "(--no-cache: always generate).",
        ),
    ] = True,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON document: answer, abstained, citations, sources, support, timings, "
            "tokens, cached.",
        ),
    ] = False,
    open_source: Annotated[
        bool,
        typer.Option(
            "--open",
            help="Also open the first cited source in your viewer, at its page where the viewer "
            "allows; without a display its PATH:PAGE is named on stderr. Stdout is unchanged.",
        ),
    ] = False,
    index: IndexOption = None,
    embed_model: EmbedModelOption = None,
) -> None:
    """Answer a question from your documents with a local model, citing the sources [1], [2].

    On a terminal the answer streams as it is generated, followed by its sources (path and
    page) and each sentence's support, labelled supported, partial or unsupported (and
    coloured, where colour is on). When nothing relevant is found it says so instead of
    guessing.

    Examples:

        rag ask "How long does the dough rest?"

        rag ask "Who built the lighthouse?" --mode bm25 --rerank llm --json

        rag ask "At what temperature is the bread baked?" --model qwen2.5-coder-0.5b

        cat questions.txt | rag ask - --max-tokens 64 > answers.jsonl

        rag ask "Who built the lighthouse?" --open

        rag ask --doc notes/bread.md "Summarize this document"
    """
    from ragcli.index import open_index

    index_ = open_index(
        index,
        embed_model=embed_model,
        gguf_model=model,
        mode=mode,
        top_k=top_k,
        group=group,
        ctx=ctx,
        max_tokens=max_tokens,
        threads=threads,
    )
    options = index_.ask_options(
        filters=None if filters is None else CommandLineFilters(filters),
        min_score=min_score,
        rerank=rerank,
        rerank_model=rerank_model,
        candidates=candidates,
        require=require,
        exclude=exclude,
        fusion=fusion,
        weights=parse_weights(weights),
        model=model,
        temperature=temperature,
        seed=seed,
        rewrite=rewrite,
        use_cache=cache,
        answer_style=answer_style,
        reader=reader,
        evidence_chars=evidence_chars,
        doc=doc,
    )
    questions = stdin_lines(
        question, metavar="QUESTION", plural="questions", empty="the question is empty: ask something"
    )
    if open_source and questions is not None:
        raise typer.BadParameter(
            "opens the first cited source of one QUESTION, not of questions from stdin", param_hint="--open"
        )
    with index_:
        if questions is not None:
            print_answers(index_, questions, options)
        else:
            answer = print_answer(index_, str(question), options, json_output=json_output)
            if open_source:
                open_first_cited(answer)


def print_answer(asker, question: str, options, *, json_output: bool = False):
    """Answer one question on stdout: streamed text and sources, or one JSON document; returns
    the `Answer`.

    Also the body of `rag query --answer`.
    """
    if json_output:
        answer = asker.ask(question, options)
        log_timings(answer)
        emit_json("answer", answer.to_dict())
    else:
        answer = _print_streamed(asker.stream(question, options))
        log_timings(answer)
    return answer


def open_first_cited(answer) -> None:
    """`--open`: the answer's first cited source in the viewer, at its page (see `open_cited`)."""
    from ragcli.cli.opener import open_cited

    if answer is None or answer.abstained or not answer.citations:
        open_cited(None, None, "cited source")
        return
    number = answer.citations[0]
    open_cited(answer.source(number).path, answer.page(number), "first cited source")


def log_timings(answer) -> None:
    """`rag -v ask`: the model and each stage's time, from the answer's own timings."""
    import logging

    if answer is None:
        return
    log = logging.getLogger("ragcli.answer.ask")
    outcome = "abstained" if answer.abstained else "answered"
    log.info("model %s, %s", answer.model, f"cached answer ({outcome})" if answer.cached else outcome)
    for stage, seconds in answer.timings.items():
        log.info("stage %s: %.3f s", stage, seconds)


def print_answers(asker, questions: Iterable[str], options) -> None:
    """Answer each question as one JSON line (stdin mode); a question too long to ask is said on
    stderr and the others are answered (exit 2 at the end). Each line's "question" is the line as
    read, as `rag query -` echoes its queries: a byte that is not UTF-8 stays that byte (a JSON
    escape), so a script can join answers to its input lines."""
    from ragcli.cli.stdin import OverLong

    too_long = OverLong("question")
    emit_jsonl(
        {
            "schema_version": SCHEMA_VERSION,
            "kind": "answer",
            **asker.ask(line, options).to_dict(),
            "question": line,
        }
        for line in questions
        if too_long.allowed(line)
    )
    too_long.exit_if_any()


def _print_streamed(items):
    """Answer text to stdout as it comes; then sources (and support, on a terminal)."""
    from ragcli.answer.result import Answer

    answer = None
    streamed = False
    with _waiting() as status:
        for item in items:
            status.stop()  # the first piece ends the wait
            if isinstance(item, Answer):
                answer = item
            else:
                streamed = True
                sys.stdout.write(document_text(item))
                sys.stdout.flush()
    if answer is not None and not streamed:
        sys.stdout.write(document_text(answer.text))  # e.g. "not found" decided before any generation
    sys.stdout.write("\n")
    sys.stdout.flush()
    if answer is not None and not answer.abstained:
        _print_sources(answer)
    return answer


class _NoStatus:
    def __enter__(self) -> "_NoStatus":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def stop(self) -> None:
        pass


def _waiting():
    """A spinner on stderr until the answer's first words, on a terminal only: retrieval, a
    model's loading and a long document's summary can take seconds before anything is printed."""
    from ragcli.cli.render import is_terminal

    if not is_terminal(sys.stderr):
        return _NoStatus()
    return stderr_console().status("Answering…", spinner="dots")


def _print_sources(answer) -> None:
    console = stdout_console()
    if answer.invalid_citations:
        cited = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        stderr_console().print(
            f"warning: the answer cited {cited}, which no source has; removed", markup=False
        )
    shown = [answer.source(n) for n in answer.citations] if answer.citations else list(answer.sources)
    if not shown:
        return
    title = "Sources (inferred from support):" if answer.citations_inferred else "Sources:"
    console.print(f"\n{title}", markup=False, highlight=False)
    for source in shown:
        where = cited_place(source.path, answer.page(source.number), answer.quoted_from(source.number))
        console.print(f"  [{source.number}] {printable(where)}", markup=False, highlight=False)
    if console.is_terminal and answer.support:
        _print_support(console, answer)


def _print_support(console, answer) -> None:
    from rich.text import Text

    # A verbatim quote of a source, or a document's own title and headings, is supported by
    # construction: labelling it is noise.
    shown = [
        item
        for item in answer.support
        if not (answer.is_verbatim_quote(item.sentence) or answer.is_outline(item.sentence))
    ]
    if not shown:
        return
    console.print("\nSupport:", highlight=False, markup=False)
    for item in shown:
        source = f"[{item.source}]" if item.source is not None else "[-]"
        # The label is a word, not only a colour: meaning must survive --color never.
        line = Text(f"  {source} {item.score:.2f} ")
        line.append(f"{item.label:<11}", style=SUPPORT_STYLES.get(item.label, ""))
        line.append(" ")
        width = max(console.width - len(line) - 1, 20)
        line.append(_shorten(terminal_text(item.sentence), width), style=SUPPORT_STYLES.get(item.label, ""))
        console.print(line, highlight=False)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
