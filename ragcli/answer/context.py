"""Turn retrieved hits into the numbered sources a model reads.

1. **Dedupe**: hits whose chunk text is the same (after whitespace normalisation) are one
   hit; the best-scoring copy stays. Identical texts in two files are one source, cited as
   the copy that is a file of its own where one is (a report on disk, not the same report
   attached to a mail): the file a user can open, whichever copy happened to rank first.
2. **Merge** (Lucina's adjacent-chunk merging): hits from the same document and group whose
   windows touch or overlap (consecutive ``order`` or overlapping character offsets) become
   one source, its parts joined in document order with the overlap written once.
3. **Number**: sources are ordered by their best hit's score and numbered ``[1]..[n]``.
4. **Fit** the token budget: sources are taken best first while they fit; a merged source
   too long for what is left falls back to its best single part; a source that still does
   not fit is skipped so a smaller one further down can use the room. Numbering is done
   after fitting, so the numbers the model sees are ``1..n`` without gaps.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence

from ragcli.errors import RagError
from ragcli.generation.llama import TEMPLATE_MARGIN
from ragcli.text import PART_SEPARATOR
from ragcli.types import Hit

CountTokens = Callable[[str], int]


class ContextTooSmall(RagError):
    """Not even one retrieved chunk fits in the model's context window."""


@dataclass(frozen=True)
class Source:
    """One numbered passage given to the model.

    Attributes:
        number: the citation number ``[number]`` the model sees.
        path: the document's path.
        page: the page of the first merged chunk (PDF), else None.
        score: the best retrieval score among the merged chunks.
        text: the passage (merged chunks in document order).
        chunk_ids: the chunks it was made of, in document order.
    """

    number: int
    path: str
    page: int | None
    score: float
    text: str
    chunk_ids: tuple[int, ...]

    def header(self) -> str:
        """How the source is introduced in the prompt: ``[1] notes/a.md, page 2``."""
        where = f"{self.path}, page {self.page}" if self.page is not None else self.path
        return f"[{self.number}] {where}"


def text_key(text: str) -> str:
    """Identity of a chunk text for deduplication: sha256 of its whitespace-normalised form."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def dedupe(hits: Iterable[Hit]) -> list[Hit]:
    """Drop repeated chunks (same id or same text), keeping each one's best-scoring copy, or
    a copy that is a file of its own in its place (`prefer_own_files`)."""
    kept: dict[str, Hit] = {}
    seen_ids: set[int] = set()
    for hit in prefer_own_files(sorted(hits, key=lambda h: -h.score)):
        key = text_key(hit.chunk.text)
        if hit.chunk.id in seen_ids or key in kept:
            continue
        seen_ids.add(hit.chunk.id)
        kept[key] = hit
    return list(kept.values())


def prefer_own_files(hits: Sequence[Hit]) -> list[Hit]:
    """`hits` in their order, except that a part of a file (a mail's attachment, a mailbox's
    message: ``note.eml#1/report.txt``) changes places, scores and ranks with a later copy of
    the same text that is a file of its own: the copy a user can open is the one cited."""
    result = list(hits)
    if not any(_is_part(hit.chunk.path) for hit in result):
        return result
    keys = [text_key(hit.chunk.text) for hit in result]
    own: dict[str, list[int]] = {}  # text -> positions of its copies that are files of their own
    for position, hit in enumerate(result):
        if not _is_part(hit.chunk.path):
            own.setdefault(keys[position], []).append(position)
    for position, hit in enumerate(result):
        later = [p for p in own.get(keys[position], []) if p > position]
        if _is_part(hit.chunk.path) and later:
            other = result[later[0]]
            result[position] = replace(other, score=hit.score, rank=hit.rank)
            result[later[0]] = replace(hit, score=other.score, rank=other.rank)
            own[keys[position]].remove(later[0])
    return result


def _is_part(path: str) -> bool:
    """A document stored as a part of a file (``note.eml#1/report.txt``, ``inbox.mbox#2``)."""
    return PART_SEPARATOR in path


def _touches(a: Hit, b: Hit) -> bool:
    """Whether `b` continues `a` in the same document (consecutive or overlapping windows)."""
    ca, cb = a.chunk, b.chunk
    if (ca.doc_id, ca.group) != (cb.doc_id, cb.group):
        return False
    return cb.order - ca.order == 1 or (cb.start <= ca.end and cb.end >= ca.start)


def merge_adjacent(hits: Sequence[Hit]) -> list[list[Hit]]:
    """Group hits into runs of touching chunks of one document, each run in document order.

    Returns:
        The runs, best run (highest score of its hits) first.
    """
    ordered = sorted(hits, key=lambda h: (h.chunk.doc_id, h.chunk.group, h.chunk.order, h.chunk.start))
    runs: list[list[Hit]] = []
    for hit in ordered:
        if runs and _touches(runs[-1][-1], hit):
            runs[-1].append(hit)
        else:
            runs.append([hit])
    return sorted(runs, key=lambda run: -max(h.score for h in run))


def merge_texts(run: Sequence[Hit]) -> str:
    """Join the chunk texts of one run, writing overlapping characters once.

    Chunks are raw substrings ``document[start:end]``, so the overlap of the next chunk
    with the text so far is exactly ``end_so_far - next.start`` characters.
    """
    text, end = run[0].chunk.text, run[0].chunk.end
    for hit in run[1:]:
        chunk = hit.chunk
        if chunk.start < end:
            text += chunk.text[end - chunk.start :]
        else:
            text += "\n" + chunk.text
        end = max(end, chunk.end)
    return text


def context_budget(n_ctx: int, max_tokens: int, prompt_tokens: int) -> int:
    """Tokens left for sources: the window minus the answer, the prompt and the template margin."""
    return n_ctx - max_tokens - prompt_tokens - TEMPLATE_MARGIN


def build_context(
    hits: Sequence[Hit], *, budget: int, count_tokens: CountTokens, max_sources: int | None = None
) -> list[Source]:
    """Dedupe, merge, fit and number the hits (see the module docstring for the steps).

    Args:
        hits: retrieved hits, any order.
        budget: tokens available for the sources' headers and texts.
        count_tokens: the generator's tokenizer.
        max_sources: stop after this many sources (None: as many as fit).

    Returns:
        Sources numbered from 1, best first. Empty when `hits` is empty.

    Raises:
        ContextTooSmall: there were hits but not even one fits the budget.
    """
    runs = merge_adjacent(dedupe(hits))
    chosen: list[list[Hit]] = []
    left = budget
    for run in runs:
        if max_sources is not None and len(chosen) >= max_sources:
            break
        fitted = _fit(run, left, count_tokens)
        if fitted is not None:
            run, cost = fitted
            chosen.append(run)
            left -= cost
    if runs and not chosen:
        raise ContextTooSmall(
            f"context too small for any chunk ({budget} tokens left for sources): "
            "raise --ctx, lower --max-tokens or use a finer --group"
        )
    return [_source(number, run) for number, run in enumerate(chosen, start=1)]


def _fit(run: list[Hit], left: int, count_tokens: CountTokens) -> tuple[list[Hit], int] | None:
    """The run (or its best single chunk) and its token cost, if it fits in `left` tokens."""
    first = run[0].chunk
    # The header's number is not known yet; two digits is the widest it gets in practice.
    header_cost = count_tokens(Source(99, first.path, first.page, 0.0, "", ()).header()) + 2
    cost = count_tokens(merge_texts(run)) + header_cost
    if cost <= left:
        return run, cost
    if len(run) > 1:
        best = max(run, key=lambda h: h.score)
        cost = count_tokens(best.chunk.text) + header_cost
        if cost <= left:
            return [best], cost
    return None


def _source(number: int, run: Sequence[Hit]) -> Source:
    first = run[0].chunk
    return Source(
        number=number,
        path=first.path,
        page=first.page,
        score=max(h.score for h in run),
        text=merge_texts(run),
        chunk_ids=tuple(h.chunk.id for h in run),
    )
