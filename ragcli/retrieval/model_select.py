"""LLM retrieval: the local GGUF model picks the relevant passages among lexical/hybrid candidates.

The idea is AdalFlow's `LLMRetriever`: number the candidate passages in one prompt and ask the
model which numbers answer the question. The steps:

1. Size the prompt: the question, the instructions and the answer's tokens are reserved from
   `generator.n_ctx`; the rest is shared among the passages, each truncated to its share
   (candidates that cannot get a useful share are left out of the prompt).
2. Ask for "the numbers of the relevant passages, comma separated", constrained by a GBNF grammar
   so a small model cannot wander into prose.
3. Parse the answer leniently (ranges, duplicates, out-of-range numbers, prose around numbers);
   if nothing usable comes back, fall back to the candidates' own order.
4. Never return fewer hits than asked for while candidates remain: a model that picks fewer
   passages than `top_k` (a small one often names one) is followed by the candidates' order,
   and a warning says the model did not select (the filled hits carry no "llm" source).
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Callable, Sequence

from ragcli.generation.llama import TEMPLATE_MARGIN, Generator, Message
from ragcli.types import Hit

SOURCE = "llm"
log = logging.getLogger(__name__)

# Passage numbers, comma separated; three digits are plenty (candidate lists are at most a few
# hundred long). Measured on 12 xquad-en questions with SmolLM2-135M (8 BM25 candidates): a
# variant allowing a prose lead-in before the numbers chose no better (top-1 correct 8/12 for
# both) and was about ten times slower, as the sampler checks a permissive grammar against the
# whole vocabulary at every token. The strict list often comes back as "1, 2, 3, ...", which
# is simply the candidates' own order.
SELECTION_GRAMMAR = r"""
root ::= num (", " num)*
num ::= [1-9] [0-9]? [0-9]?
"""

SYSTEM_PROMPT = "You pick the passages that help answer a question. Reply with passage numbers only."
INSTRUCTION = (
    "Which passages are relevant to the question? Answer with the numbers of the relevant "
    "passages, most relevant first, comma separated."
)

MAX_PASSAGE_TOKENS = 200  # a compact prompt: more candidates matter more than longer excerpts
MIN_PASSAGE_TOKENS = 24  # below this a passage is too cut to judge; leave it out instead

_NUMBER_OR_RANGE = re.compile(r"(\d+)(?:\s*(?:-|–|—|\.\.|to)\s*(\d+))?")


def truncate_to_tokens(text: str, budget: int, count_tokens: Callable[[str], int]) -> str:
    """Cut `text` at a word boundary so that it holds at most `budget` tokens.

    Args:
        text: The text to shorten.
        budget: The most tokens allowed.
        count_tokens: The model's token counter.

    Returns:
        `text` itself when it fits, else a prefix that fits ("" when `budget` < 1).
    """
    if budget < 1:
        return ""
    tokens = count_tokens(text)
    if tokens <= budget:
        return text
    # Guess a cut from the characters-per-token ratio, then shrink until it fits; a few
    # rounds suffice because the ratio is stable inside one text.
    cut = int(len(text) * budget / tokens)
    for _ in range(8):
        prefix = _word_prefix(text, cut)
        if count_tokens(prefix) <= budget:
            return prefix
        cut = int(cut * 0.85)
    return ""


def _word_prefix(text: str, cut: int) -> str:
    """The text up to `cut`, moved back to the last whitespace when there is one nearby."""
    prefix = text[:cut]
    space = prefix.rfind(" ")
    return prefix[:space].rstrip() if space > cut * 0.7 else prefix.rstrip()


def parse_selection(text: str, count: int) -> list[int]:
    """Read passage numbers from a model's answer.

    Accepts "3, 1", "[1, 4]", "Passages 2 and 3", ranges like "2-4" (clipped to `count`);
    numbers outside 1..count and repeats are dropped.

    Args:
        text: The model's answer.
        count: How many passages were shown (numbered from 1).

    Returns:
        Zero-based passage indices in the order the model gave them, without repeats.
    """
    chosen: list[int] = []
    for match in _NUMBER_OR_RANGE.finditer(text):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        for number in _expand(first, last, count):
            if 1 <= number <= count and number - 1 not in chosen:
                chosen.append(number - 1)
    return chosen


def _expand(first: int, last: int, count: int) -> range:
    """The numbers of a range "first-last", clipped to 1..count so "1-1000" cannot explode."""
    if first <= last:
        return range(max(first, 1), min(last, count) + 1)
    return range(min(first, count), max(last, 1) - 1, -1)


def build_messages(query: str, passages: Sequence[str]) -> list[Message]:
    """The chat messages that ask the model to pick among numbered passages."""
    numbered = "\n".join(f"[{number}] {passage}" for number, passage in enumerate(passages, 1))
    user = f"Question: {query}\n\nPassages:\n{numbered}\n\n{INSTRUCTION}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def fit_passages(
    query: str, candidates: Sequence[Hit], generator: Generator, answer_tokens: int
) -> list[str]:
    """Truncate the candidates' texts so the whole prompt fits the model's context.

    Returns:
        One text per candidate that made it into the prompt, in candidate order; trailing
        candidates are left out when even a minimal excerpt of each would not fit.
    """
    count = generator.count_tokens
    frame = count(SYSTEM_PROMPT) + count(f"Question: {query}\n\nPassages:\n\n\n{INSTRUCTION}")
    room = generator.n_ctx - frame - answer_tokens - TEMPLATE_MARGIN
    label = count("[99] \n")
    shown = min(len(candidates), max(room, 0) // (MIN_PASSAGE_TOKENS + label))
    if shown == 0:
        return []
    share = min(MAX_PASSAGE_TOKENS, room // shown - label)
    return [truncate_to_tokens(" ".join(hit.chunk.text.split()), share, count) for hit in candidates[:shown]]


def _answer_tokens(top_k: int) -> int:
    # "12, " is about three tokens; room for a few more numbers than asked for.
    return 4 * min(top_k, 99) + 16


def select(query: str, candidates: list[Hit], generator: Generator, top_k: int) -> list[Hit]:
    """Let the model choose the relevant passages among `candidates`.

    Args:
        query: The user's question.
        candidates: Hits from a first-stage retriever, best first.
        generator: The local model.
        top_k: The most hits to return.

    Returns:
        The chosen hits in the model's order, ranked from 1, with
        `sources["llm"] = {"rank": r, "score": 1/r}` added and `score` set to 1/r, then (when
        the model chose fewer than `top_k`) the other candidates in their own order, without
        an "llm" source, up to `top_k`. If the model's answer names no shown passage, the
        first `top_k` candidates unchanged except for their rank. Either shortfall is logged
        as a warning (shown on stderr).
    """
    if not candidates or top_k < 1:
        return []
    query = truncate_to_tokens(query, generator.n_ctx // 4, generator.count_tokens)
    answer_tokens = _answer_tokens(top_k)
    passages = fit_passages(query, candidates, generator, answer_tokens)
    if not passages:
        log.warning(
            "llm mode: the model's context (%d tokens) cannot hold a passage: hybrid order used",
            generator.n_ctx,
        )
        return _fallback(candidates, top_k)
    reply = generator.complete(
        build_messages(query, passages), max_tokens=answer_tokens, temperature=0.0, grammar=SELECTION_GRAMMAR
    )
    chosen = parse_selection(reply, len(passages))[:top_k]
    if not chosen:
        log.warning("llm mode: the model selected no passage: hybrid order used (a larger --model selects)")
        return _fallback(candidates, top_k)
    selected = [_mark(candidates[index], rank) for rank, index in enumerate(chosen, 1)]
    wanted = min(top_k, len(candidates))
    if len(selected) < wanted:
        log.warning(
            "llm mode: the model selected %d of the %d passages asked for; the rest follow the "
            "hybrid order (a larger --model selects better)",
            len(selected),
            wanted,
        )
        rest = [hit for index, hit in enumerate(candidates) if index not in chosen]
        selected += [replace(hit, rank=rank) for rank, hit in enumerate(rest, len(selected) + 1)][
            : wanted - len(selected)
        ]
    return selected


def _mark(hit: Hit, rank: int) -> Hit:
    score = 1.0 / rank
    sources = {**hit.sources, SOURCE: {"rank": rank, "score": score}}
    return replace(hit, score=score, rank=rank, sources=sources)


def _fallback(candidates: Sequence[Hit], top_k: int) -> list[Hit]:
    return [replace(hit, rank=rank) for rank, hit in enumerate(candidates[:top_k], 1)]
