"""The evidence quoted under a generated answer.

Under a short generated answer (or one citing nothing) ragcli quotes the passage the evidence
style quotes for the same question (`ragcli.answer.evidence.answer_with_evidence` over the same
hits), so a capable model's answer never shows less evidence than the default's, plus the
sentence holding the model's words when it is not among it. The model read its own numbered
sources (fitted to its context window); the quotes are cited in that numbering, and a passage
the evidence style read that the model's sources lack joins them, numbered after them.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Mapping, Sequence

from ragcli.answer.completion import is_list_item, is_numbered, list_of
from ragcli.answer.context import Source
from ragcli.answer.evidence import Evidence, page_of, quote
from ragcli.answer.evidence import source_sentences
from ragcli.answer.intent import asks_for_several, asks_how_to, asks_why
from ragcli.answer.sentences import Sentence
from ragcli.answer.stages import is_short_line

_CITATION = re.compile(r"\[(\d+)\]")


def joined_sources(sources: Sequence[Source], read: Sequence[Source]) -> tuple[list[Source], dict[int, int]]:
    """`sources` with each passage of `read` they lack (not the same path and text) appended,
    numbered after them; and each `read` passage's number -> its number in the result."""
    joined = list(sources)
    numbers: dict[int, int] = {}
    for source in read:
        same = next((s for s in joined if s.path == source.path and s.text == source.text), None)
        if same is None:
            same = replace(source, number=len(joined) + 1)
            joined.append(same)
        numbers[source.number] = same.number
    return joined, numbers


def renumbered(line: str, numbers: Mapping[int, int]) -> str:
    """A quoted line (or a "the list continues" line) with its citations renumbered; the quoted
    words themselves are left as they are."""
    cut = line.rfind('"') + 1 if line.startswith('"') else 0

    def number(match: re.Match) -> str:
        return f"[{numbers.get(int(match.group(1)), int(match.group(1)))}]"

    return line[:cut] + _CITATION.sub(number, line[cut:])


def quoted_evidence(
    found: Evidence, sources: Sequence[Source], support: Sentence | None
) -> tuple[list[str], tuple[Source, ...], dict[int, int]]:
    """The lines quoting `found` (the evidence style's answer) and `support` (a sentence of
    `sources`, 0-based passage) in the numbering of `sources`; the sources with any passage
    `found` read appended; citation number -> page of its first quoted sentence."""
    joined, numbers = joined_sources(sources, found.sources)
    lines = [renumbered(line, numbers) for line in found.text.split("\n") if line]
    pages = {numbers.get(n, n): page for n, page in found.pages.items()}
    words = {" ".join(s.text.split()) for s in found.sentences}
    for sentence in support_quotes(support, sources) if support is not None else ():
        if " ".join(sentence.text.split()) not in words:
            lines.append(quote(sentence))
            page = page_of(sources[sentence.passage], sentence)
            if page is not None:
                pages.setdefault(sentence.passage + 1, page)
    return lines, tuple(joined), pages


def support_quotes(support: Sentence, sources: Sequence[Source]) -> list[Sentence]:
    """The sentence holding the model's words, to quote; a numbered step brings its whole
    procedure in order, since a step quoted alone is a procedure cut in the middle."""
    if not is_numbered(support.text):
        return [support]
    return list_of(support, source_sentences(sources[support.passage], support.passage)) or [support]


def agrees(question: str, short: str, found: Evidence) -> bool:
    """Whether a generated short line may stand above the evidence `found` for `question`.

    A why- or how-to question is answered by a reason or a procedure, which the evidence style
    picks by the shape of the text (a sentence stating a reason, numbered steps); a 0.5B model's
    short line for it is a phrase copied from whatever sentence it chose ("why are my copies
    slow?" -> "tidepool mirror", from the usage section, over a troubleshooting section giving
    the reason). Such a line is kept only when a quoted sentence holds its words: above quotes
    that say something else, it misleads more than no line. Other questions ask for a span (a
    name, a number, a term) and keep the model's line: over factoid questions the same check
    dropped lines that were right a quarter of the time. A question asking for several things
    ("which storage backends ...?") whose quotes hold a list is answered by that list; a short
    line above it names one item ("an SFTP server") or a phrase near the list
    ("tidepool.toml"), which reads as the whole answer, so none is shown. (Without a list
    quoted, the question is read as a factoid: "what causes strain in structures?" has a plural
    noun, and its short line is the answer.)
    """
    if not is_short_line(short):
        return True
    if asks_for_several(question) and any(is_list_item(s.text) for s in found.sentences):
        return False
    if not (asks_why(question) or asks_how_to(question)):
        return True
    return quotes_hold(found.sentences, short)


def quotes_hold(quoted: Sequence[Sentence], short: str) -> bool:
    """Whether one of the `quoted` sentences holds every word of a generated short line.

    A small model often copies its short line from a sentence that is not the answer ("why are
    my copies slow?" -> "tidepool mirror", from the usage section, over a troubleshooting
    section that gives the reason); the evidence chosen for the question does not quote that
    sentence, so the line then says something the quotes under it do not.
    """
    words = set(re.findall(r"\w+", short.lower()))
    return bool(words) and any(words <= set(re.findall(r"\w+", s.text.lower())) for s in quoted)
