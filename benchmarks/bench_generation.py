"""Generation overhead: llama-cpp-python called directly vs ragcli's generator and answer step.

    python benchmarks/bench_generation.py                      # packaged SmolLM2, 7 rounds
    python benchmarks/bench_generation.py --model X.gguf --max-tokens 64 --rounds 9

The same chat messages (the `cited` prompt over fixture passages) go through:

- ``direct``: ``Llama.create_chat_completion(stream=True)``, pieces collected;
- ``generator``: `LlamaCppGenerator.stream` on the same loaded model;
- ``answer step``: the pipeline's generation stage (`stream_answer`) plus what `rag ask`
  does after it (citation parsing and checking, support annotation).

Each round runs the three in rotating order; the KV cache is reset before every call so
each one evaluates the whole prompt (otherwise llama-cpp-python reuses the shared prefix
and later calls look faster). Reported: median total seconds and median time to first
token per variant, the minimum total (the least disturbed run: on a shared machine other
processes only ever add time), and the overhead of each over ``direct`` by median and by
minimum (target <= 5%).

On a busy machine those end-to-end numbers swing by more than 5% run to run, so the
Python work itself is also timed on a replayed stream (the recorded chunks served
instantly, no model): that difference is the true overhead, load-independent, reported as a
share of a real answer. Timings are for reading, never asserted.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path
from typing import Callable, Iterator

from ragcli.answer.options import AskOptions

from ragcli.answer.run import AnswerRun

from ragcli.answer.stages import stream_answer
from ragcli.config import default_gguf_path
from ragcli.answer.context import Source
from ragcli.generation.llama import LlamaCppGenerator
from ragcli.answer.prompting import cited_prompt
from ragcli.answer.support import annotate_support

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "docs"
QUESTION = "How long should sourdough dough rest before baking?"


def fixture_sources(limit_chars: int) -> list[Source]:
    """Two consecutive English passages of the bread fixture, `limit_chars` each."""
    text = (FIXTURES / "bread_baking.md").read_text(encoding="utf-8")
    parts = [text[:limit_chars], text[limit_chars : 2 * limit_chars]]
    return [Source(n, "docs/bread_baking.md", None, 1.0, part, (n,)) for n, part in enumerate(parts, start=1)]


class ReplayLlama:
    """Replays recorded stream chunks instantly, so only the Python around llama.cpp is timed."""

    def __init__(self, chunks: list[dict], n_tokens: int) -> None:
        self.chunks = chunks
        self.n_tokens = n_tokens

    def create_chat_completion(self, messages, **kwargs) -> Iterator[dict]:
        return iter(self.chunks)


def python_overhead(generator: LlamaCppGenerator, messages, options: AskOptions, finish, rounds: int = 300):
    """Median seconds per call of each variant over a replayed stream (no model work)."""
    chunks = list(
        generator._llama.create_chat_completion(
            messages, max_tokens=options.max_tokens, temperature=0.0, seed=0, stream=True
        )
    )
    replay = copy.copy(generator)
    replay._llama = ReplayLlama(chunks, generator._llama.n_tokens)
    variants = {
        "direct": lambda: timed(direct(replay._llama, messages, options.max_tokens)),
        "generator": lambda: timed(replay.stream(messages, max_tokens=options.max_tokens)),
        "answer step": lambda: timed(stream_answer(replay, messages, options), finish),
    }
    return {name: statistics.median(run()[1] for _ in range(rounds)) for name, run in variants.items()}


def timed(pieces: Iterator[str], after: Callable[[str], object] | None = None) -> tuple[float, float]:
    """(time to first piece, total) of consuming `pieces`, including `after(text)` in the total."""
    started = time.perf_counter()
    first = None
    collected = []
    for piece in pieces:
        if first is None:
            first = time.perf_counter() - started
        collected.append(piece)
    if after is not None:
        after("".join(collected))
    total = time.perf_counter() - started
    return (first if first is not None else total), total


def direct(llama, messages, max_tokens: int) -> Iterator[str]:
    for chunk in llama.create_chat_completion(
        messages, max_tokens=max_tokens, temperature=0.0, seed=0, stream=True
    ):
        piece = chunk["choices"][0]["delta"].get("content")
        if piece:
            yield piece


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="GGUF file (default: packaged SmolLM2)")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--passage-chars", type=int, default=600)
    args = parser.parse_args()

    generator = LlamaCppGenerator(args.model or default_gguf_path(), n_ctx=2048, threads=args.threads, seed=0)
    llama = generator._llama  # the same loaded model for every variant
    sources = fixture_sources(args.passage_chars)
    messages = cited_prompt(QUESTION, sources)
    options = AskOptions(max_tokens=args.max_tokens)

    def finish(text: str) -> object:
        run = AnswerRun(QUESTION, options, time.perf_counter())
        return run.finish(text, tuple(sources), generator, annotate_support)

    variants = {
        "direct": lambda: timed(direct(llama, messages, args.max_tokens)),
        "generator": lambda: timed(generator.stream(messages, max_tokens=args.max_tokens)),
        "answer step": lambda: timed(stream_answer(generator, messages, options), finish),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    names = list(variants)
    timed(direct(llama, messages, 4))  # warm-up: page the weights in
    for round_number in range(args.rounds):
        for name in names[round_number % 3 :] + names[: round_number % 3]:
            llama.reset()  # no prompt-prefix reuse between calls
            results[name].append(variants[name]())
    usage = dict(generator.last_usage)
    report(results, usage, args)
    replayed = python_overhead(generator, messages, options, finish)
    base = statistics.median(total for _, total in results["direct"])
    print("\nPython work around llama.cpp (replayed stream, no model), per answer:")
    for name, seconds in replayed.items():
        extra = seconds - replayed["direct"]
        print(
            f"{name:<12} {seconds * 1000:>8.3f} ms   +{extra * 1000:.3f} ms over direct = "
            f"{100 * extra / base:.3f}% of a real answer"
        )


def report(results: dict[str, list[tuple[float, float]]], usage: dict, args: argparse.Namespace) -> None:
    base = statistics.median(total for _, total in results["direct"])
    base_min = min(total for _, total in results["direct"])
    print(
        f"prompt {usage['prompt']} tokens, completion {usage['completion']} tokens, "
        f"{args.rounds} rounds, {args.threads} threads"
    )
    print(
        f"{'variant':<12} {'first token s':>14} {'median s':>9} {'min s':>7} {'tok/s':>7} "
        f"{'overhead (median)':>18} {'overhead (min)':>15}"
    )
    for name, samples in results.items():
        first = statistics.median(f for f, _ in samples)
        total = statistics.median(t for _, t in samples)
        least = min(t for _, t in samples)
        rate = usage["completion"] / max(total - first, 1e-9)
        print(
            f"{name:<12} {first:>14.3f} {total:>9.3f} {least:>7.3f} {rate:>7.1f} "
            f"{100 * (total - base) / base:>17.1f}% {100 * (least - base_min) / base_min:>14.1f}%"
        )


if __name__ == "__main__":
    main()
