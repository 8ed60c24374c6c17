"""Evidence that answers: the passage of the retrieved text that answers the question, quoted.

The default answer without a capable model. A small model cannot write answers, but the
retrieved text holds them, so the answer a user sees is that text, chosen by its structure:

1. The best passages are numbered as sources and every sentence of them is scored against
   the question (`ragcli.answer.sentences`: the question's terms it covers and embedding
   similarity). When the best sentence is weak evidence, the answer abstains (`is_answerable`).
2. Each thing a comparison names that no chosen sentence describes gets its own description
   first (`ragcli.answer.comparison`). The best sentence is completed from its own document
   (`complete`): a sentence that introduces a list (it ends with ":" or is a list item) brings
   the list (the items' own lines first: bullets, numbers, a definition list's terms); any
   other brings the sentences after it in its section (up to the next heading or term: the
   explaining sentence after a statement, a definition's next sentence, an option's
   description) and the one before it; a sentence opening by pointing back ("This makes ...",
   "To achieve this, ...") brings the one before it too (`refers_back`).
3. Question terms still uncovered (the other side of a comparison) bring the best sentence
   that covers them, then sentences scoring nearly as well as the best fill what is left.
4. All of it stays within a budget of characters (`AskOptions.evidence_chars`) and is quoted
   in document order, each line cited; a list cut short says so on a line of its own.

A short line (a number, date or name the question's wh-word asks for) may come first: the
reader decides it (`ragcli.answer.readers`), and only from the quoted evidence. Each citation's
page is the page the quoted sentence is on (PDF pages are ``\\f``-separated in the text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from ragcli.analysis import analyze
from ragcli.answer.comparison import missing_sides, side_description
from ragcli.answer.context import Source, build_context
from ragcli.answer.sentences import Sentence, question_terms, score_sentences, sentences_of
from ragcli.answer.structure import paragraph_label
from ragcli.embedding.base import Embedder
from ragcli.types import Hit

if TYPE_CHECKING:
    from ragcli.answer.readers import Reader

# Abstention (calibrated on xquad-en's tune half with a held-out-articles index): answer when the
# best sentence covers this share of the question's content terms, or when its embedding cosine
# with the question reaches DENSE_EVIDENCE.
LEXICAL_EVIDENCE = 0.4
DENSE_EVIDENCE = 0.5
# Or when the best SPREAD sentences together hold this share of the question's terms.
SPREAD = 3
SPREAD_EVIDENCE = 0.6
# Characters of quoted evidence by default (a setting: `AskOptions.evidence_chars`; 700 -> 1000
# on docs-qa's tune half: 0.37 -> 0.42 answered).
EVIDENCE_CHARS = 1000
# A sentence from elsewhere joins when it scores this share of the best one's score.
SECOND_SENTENCE = 0.8
# For a question asking for several things (`asks_for_several`), the sentences scoring this share
# of the best one's join too, each with its label line (docs-qa tune half: 0.4-0.6 alike)
SEVERAL_SHARE = 0.5
# and the budget grows by this factor: a list of ten terms needs more room than one answer
# (docs-qa tune half: answered 0.526 at 1.0 and 1.5, 0.579 at 2.0 and 2.5).
SEVERAL_BUDGET = 2.0
# A sentence covering question terms the chosen ones lack joins when it scores this share.
COVERAGE_SHARE = 0.5
# The sentences after (and before) the best one in its section that complete it; with the
# budget and three passages read, chosen on docs-qa's tune half (answered 0.29 -> 0.42).
FOLLOWING = 2
PRECEDING = 1
# At most this many lines after a sentence introducing a list are read as that list.
LIST_LINES = 40
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)])\s")


@dataclass(frozen=True)
class Evidence:
    """What the evidence stage found.

    Attributes:
        text: the answer a user sees (short answer line, then quoted sentences with citations).
        short: the short answer without its citation, or None when none is shown.
        sources: the numbered passages read.
        abstained: the evidence was too weak.
        sentences: the quoted sentences, in the order shown.
        pages: citation number -> page of the first quoted sentence (only where pages are known).
    """

    text: str
    short: str | None
    sources: tuple[Source, ...]
    abstained: bool
    sentences: tuple[Sentence, ...] = ()
    pages: Mapping[int, int] = field(default_factory=dict)


def is_answerable(
    sentence: Sentence | None, *, lexical: float | None = None, dense: float | None = None
) -> bool:
    """Whether the best sentence is evidence enough to answer (see the thresholds above)."""
    lexical = LEXICAL_EVIDENCE if lexical is None else lexical
    dense = DENSE_EVIDENCE if dense is None else dense
    return sentence is not None and (sentence.lexical >= lexical or sentence.dense >= dense)


def covers_question(question: str, sentences: Sequence[Sentence]) -> bool:
    """Whether the best few sentences together hold `SPREAD_EVIDENCE` of the question's terms
    (both sides of a comparison are rarely in one sentence)."""
    terms = question_terms(question)
    return bool(terms) and len(terms - _uncovered(question, sentences)) >= SPREAD_EVIDENCE * len(terms)


def numbered_sources(hits: Sequence[Hit], passages: int) -> list[Source]:
    """The best `passages` hits as numbered sources (deduplicated, adjacent chunks merged)."""
    return build_context(
        list(hits)[:passages], budget=10**9, count_tokens=lambda text: 0, max_sources=passages
    )


def page_of(source: Source, sentence: Sentence) -> int | None:
    """The page `sentence` is on: its source's first page plus the page breaks before it."""
    if source.page is None:
        return None
    return source.page + source.text.count("\f", 0, sentence.start)


def is_title(text: str) -> bool:
    """A heading or a title line ("Victoria (Australia)"): short, no full stop; no evidence."""
    text = text.strip()
    if is_list_item(text):
        return False
    short = len(text.split()) < 5 and len(text) < 40  # (CJK text has no spaces: count characters too)
    return text.startswith("#") or (short and not text.endswith((".", "!", "?", ":", "。", "！", "？")))


def is_list_item(text: str) -> bool:
    """A bulleted or numbered line ("- 500 g flour", "2. Add the salt")."""
    return bool(_LIST_ITEM.match(text))


def quote(sentence: Sentence, also: Sequence[int] = ()) -> str:
    """The sentence quoted and cited; `also`: other sources (0-based) saying the same words."""
    cited = " ".join(f"[{passage + 1}]" for passage in (sentence.passage, *also))
    return f'"{" ".join(sentence.text.split())}" {cited}'


def rank_source_sentences(
    question: str, sources: Sequence[Source], *, embedder: Embedder | None = None
) -> list[Sentence]:
    """Every sentence of the sources (headings left out) scored against the question, best first;
    ``Sentence.passage`` is the index of its source."""
    sentences = [s for s in sentences_of([s.text for s in sources]) if not is_title(s.text)]
    return score_sentences(question, sentences, embedder=embedder)


def rank_sentences(
    question: str, hits: Sequence[Hit], *, embedder: Embedder | None = None, passages: int = 3
) -> tuple[tuple[Source, ...], list[Sentence]]:
    """The best `passages` hits as numbered sources, and all their sentences scored, best first."""
    sources = tuple(numbered_sources(hits, passages))
    return sources, rank_source_sentences(question, sources, embedder=embedder)


class _Selection:
    """The sentences chosen so far, within a character budget."""

    def __init__(self, budget: int, label: Callable[[Sentence], Sentence | None] | None = None) -> None:
        self.left = budget
        self.chosen: list[Sentence] = []
        self.cut: set[int] = set()  # sources whose list was cut short
        self.label = label  # the label line a sentence's paragraph sits under, quoted with it
        # Other sources saying a chosen sentence's words (pages that include a shared text, a
        # man page and its HTML twin): the sentence is quoted once and cites them all.
        self.also: dict[tuple[int, int], list[int]] = {}

    def has(self, sentence: Sentence) -> bool:
        """Chosen already: the same sentence, or the same words from another source."""
        return self._twin(sentence) is not None

    def _twin(self, sentence: Sentence) -> Sentence | None:
        words = " ".join(sentence.text.split())
        return next(
            (
                s
                for s in self.chosen
                if (s.passage == sentence.passage and s.start == sentence.start) or _same_words(s.text, words)
            ),
            None,
        )

    def add(self, sentence: Sentence) -> bool:
        """Add `sentence` when it fits (the first one always does); False when it does not."""
        twin = self._twin(sentence)
        if twin is not None:
            also = self.also.setdefault((twin.passage, twin.start), [])
            if sentence.passage != twin.passage and sentence.passage not in also:
                also.append(sentence.passage)
            return True
        label = self.label(sentence) if self.label is not None else None
        # The sentence before its label: the first chosen is the best sentence, which the
        # reader reads its short line from (lines are rendered in document order anyway).
        pieces = [sentence] if label is None or self.has(label) else [sentence, label]
        cost = sum(len(piece.text) + 6 for piece in pieces)
        if self.chosen and cost > self.left:
            return False
        self.chosen += pieces
        self.left -= cost
        return True


def _same_words(text: str, words: str) -> bool:
    """The same sentence, or one cut short by a chunk's end (a prefix of 40+ characters)."""
    other = " ".join(text.split())
    shorter, longer = sorted((other, words), key=len)
    return shorter == longer or (len(shorter) >= 40 and longer.startswith(shorter))


def _list_run(in_order: Sequence[Sentence], at: int) -> list[Sentence]:
    """The list items that follow position `at` (the sentence introducing them, or an item)."""
    run = []
    for sentence in in_order[at + 1 :]:
        if not is_list_item(sentence.text):
            break
        run.append(sentence)
    return run


def _list_block(block: Sequence[Sentence], chosen: _Selection, passage: int) -> None:
    """A list after its introduction: the items' own lines (bullets, numbers, a definition
    list's terms) first, then what explains them, all in document order; cut when the budget
    ends, which the answer then says."""
    heads = [s for s in block if is_list_item(s.text) or is_title(s.text)]
    for sentence in heads + [s for s in block if s not in heads]:
        if not chosen.add(sentence):
            chosen.cut.add(passage)
            return


def introduces_list(sentence: Sentence) -> bool:
    """A sentence ending with a colon announces what follows (a list, steps, an example)."""
    return sentence.text.rstrip().endswith(":")


def _bring_list(intro: Sentence, every: Sequence[Sentence], chosen: _Selection) -> None:
    """The list after its introduction: a marked list's items only, else the lines after it."""
    following = [s for s in every if s.start > intro.start]
    if following and is_list_item(following[0].text):
        following = _list_run(following, -1)
    _list_block(following[:LIST_LINES], chosen, intro.passage)


def complete(
    best: Sentence,
    in_order: Sequence[Sentence],
    text: str,
    chosen: _Selection,
    every: Sequence[Sentence] = (),
) -> None:
    """Add what completes the best sentence in its own document (see the module docstring).

    `every` is all the source's sentences in document order, headings and terms included."""
    at = next(i for i, s in enumerate(in_order) if s.start == best.start)
    if introduces_list(best):
        _bring_list(best, every, chosen)
        return
    if is_list_item(best.text):  # back to the list's first item and its introduction
        while at > 0 and is_list_item(in_order[at - 1].text):
            at -= 1
        if at > 0 and in_order[at - 1].text.rstrip().endswith(":"):
            at -= 1
        chosen.add(in_order[at])
        _list_block(_list_run(in_order, at), chosen, best.passage)
        return
    section = _section(best, every)
    following = [s for s in section if s.start > best.start]
    before = [s for s in section if s.start < best.start]
    for sentence in following[:FOLLOWING]:
        if not chosen.add(_ranked(sentence, in_order)):
            return
        if introduces_list(sentence):  # "... The variants are as follows:"
            _bring_list(sentence, every, chosen)
            return
    first = best
    for sentence in reversed(before[-PRECEDING:] if PRECEDING else []):
        if not chosen.add(_ranked(sentence, in_order)):
            return
        first = sentence
    earlier = [s for s in before if s.start < first.start]
    while earlier and refers_back(first.text) and chosen.add(_ranked(earlier[-1], in_order)):
        first = earlier.pop()


# Words that open a sentence leaning on the one before it ("This makes ...", "They should ...",
# "To achieve this, ..."): quoted alone, such a sentence does not say what it is about.
_REFERS_BACK = re.compile(
    r"^[\"'(]*(?:this|that|these|those|it|they|such|thus|hence|therefore|otherwise|"
    r"to (?:\w+ ){1,2}(?:this|that|it))\b",
    re.IGNORECASE,
)


def refers_back(text: str) -> bool:
    """Whether a sentence opens by pointing back at the one before it."""
    return bool(_REFERS_BACK.match(text.strip()))


def _section(best: Sentence, every: Sequence[Sentence]) -> list[Sentence]:
    """The sentences between the headings around the best sentence (a heading, or a term of a
    definition list, starts a section)."""
    start = max((i for i, s in enumerate(every) if s.start <= best.start and is_title(s.text)), default=-1)
    end = next((i for i, s in enumerate(every) if s.start > best.start and is_title(s.text)), len(every))
    return [s for s in every[start + 1 : end] if not is_title(s.text)]


def _ranked(sentence: Sentence, in_order: Sequence[Sentence]) -> Sentence:
    """The scored copy of a sentence, when it was scored."""
    return next((s for s in in_order if s.start == sentence.start), sentence)


def _uncovered(question: str, chosen: Sequence[Sentence]) -> set[str]:
    covered = {term for sentence in chosen for term in analyze(sentence.text)}
    return question_terms(question) - covered


def asks_for_several(question: str) -> bool:
    """Whether the question asks for several things (a list question, English): "which/what"
    followed by a plural noun ("which hooks", "what merge strategies"), or "list", "what are the"."""
    lowered = question.lower()
    if _LIST_REQUEST.search(lowered):
        return True
    match = re.search(r"\b(?:which|what)\b((?:\s+[\w-]+){1,3})", lowered)
    return bool(match) and any(_is_plural(word) for word in match.group(1).split())


_LIST_REQUEST = re.compile(r"\b(?:list|enumerate|what are the|name (?:all|the))\b")


def _is_plural(word: str) -> bool:
    """An English plural noun, roughly: longer than three letters, ending in a lone "s"."""
    return len(word) > 3 and word.endswith("s") and not word.endswith(_NOT_PLURAL)


_NOT_PLURAL = ("ss", "us", "is", "ous", "does", "was", "has", "gets", "goes")


def select_evidence(
    question: str, sources: Sequence[Source], ranked: Sequence[Sentence], budget: int
) -> _Selection:
    """The best sentence, what completes it, what covers the rest of the question, then close runners-up."""
    best = ranked[0]
    documents = [
        [replace(s, passage=number) for s in sentences_of([source.text])]
        for number, source in enumerate(sources)
    ]
    several = asks_for_several(question)
    chosen = _Selection(
        int(budget * (SEVERAL_BUDGET if several else 1.0)),
        lambda s: paragraph_label(s, documents[s.passage], sources[s.passage].text),
    )
    chosen.add(best)
    by_source: dict[int, list[Sentence]] = {}
    for sentence in ranked:
        by_source.setdefault(sentence.passage, []).append(sentence)
    in_order = sorted(by_source[best.passage], key=lambda s: s.start)
    every = documents[best.passage]
    for side in missing_sides(question, chosen.chosen):
        described = side_description(side, documents)
        if described is not None:
            chosen.add(_ranked(described, by_source.get(described.passage, ())))
    complete(best, in_order, sources[best.passage].text, chosen, every)
    missing = _uncovered(question, chosen.chosen)
    for sentence in ranked[1:]:
        if not missing or sentence.score < COVERAGE_SHARE * best.score:
            break
        if missing & set(analyze(sentence.text)) and chosen.add(sentence):
            missing = _uncovered(question, chosen.chosen)
    runner_up = SEVERAL_SHARE if several else SECOND_SENTENCE
    for sentence in ranked[1:]:
        if sentence.score < runner_up * best.score:
            break
        if sentence.lexical > 0 and sentence.text != best.text:
            chosen.add(sentence)
    return chosen


def quoted_under(
    question: str,
    sources: Sequence[Source],
    ranked: Sequence[Sentence],
    support: Sentence,
    *,
    passages: int,
    budget: int,
) -> _Selection:
    """The evidence quoted under a generated short answer: what the evidence style would quote
    (the best sentences of the first `passages` sources, completed), plus `support`, the
    sentence holding the model's words, when it is not among them.

    Anchoring the quote on the model's words instead lost answers a small model does not put
    in its line (steps, reasons, list items): with Qwen2.5-Coder-0.5B on the tune half of a
    real-question set, answered 0.47 anchored on the model's words, 0.55 anchored as here."""
    read = [s for s in ranked if s.passage < passages] or list(ranked)
    chosen = select_evidence(question, sources, read, budget)
    chosen.add(support)
    return chosen


def render(chosen: _Selection) -> list[str]:
    """The quoted lines: sources in the order first chosen, each one's sentences in document order."""
    order: list[int] = []
    for sentence in chosen.chosen:
        if sentence.passage not in order:
            order.append(sentence.passage)
    lines = []
    for passage in order:
        mine = sorted((s for s in chosen.chosen if s.passage == passage), key=lambda s: s.start)
        lines += [quote(s, chosen.also.get((s.passage, s.start), ())) for s in mine]
        if passage in chosen.cut:
            lines.append(f"(the list continues in [{passage + 1}])")
    return lines


def answer_with_evidence(
    question: str,
    hits: Sequence[Hit],
    *,
    embedder: Embedder | None = None,
    passages: int = 3,
    budget: int = EVIDENCE_CHARS,
    reader: Reader | None = None,
) -> Evidence:
    """The `rag ask` evidence stage (see the module docstring).

    Args:
        question: the question.
        hits: retrieved hits, best first.
        embedder: scores sentences by cosine too (None: lexical only).
        passages: how many of the best hits to read.
        budget: characters of quoted evidence.
        reader: gives the short line from the quoted evidence (None: no short line).
    """
    sources, ranked = rank_sentences(question, hits, embedder=embedder, passages=passages)
    best = ranked[0] if ranked else None
    if best is None or not (is_answerable(best) or covers_question(question, ranked[:SPREAD])):
        return Evidence("", None, sources, True, (best,) if best else ())
    chosen = select_evidence(question, sources, ranked, budget)
    short = reader.read(question, chosen.chosen) if reader is not None else None
    lines = render(chosen)
    if short is not None:
        lines.insert(0, f"{short.text} [{short.sentence.passage + 1}]")
    pages: dict[int, int] = {}
    for sentence in chosen.chosen:
        page = page_of(sources[sentence.passage], sentence)
        if page is not None:
            pages.setdefault(sentence.passage + 1, page)
    return Evidence(
        "\n".join(lines),
        short.text if short is not None else None,
        sources,
        False,
        tuple(chosen.chosen),
        pages,
    )


def excerpts(
    sources: Sequence[Source], ranked: Sequence[Sentence], *, budget: int, count_tokens
) -> list[Source]:
    """The sources cut down to their best sentences within `budget` tokens (for a prompt).

    Sentences are taken best first while they fit, then each source shows its chosen
    sentences in document order; sources with none chosen are left out, numbers are kept.
    """
    chosen: dict[int, list[Sentence]] = {}
    used = 0
    for sentence in ranked:
        cost = count_tokens(sentence.text) + 1
        if used + cost > budget:
            continue
        chosen.setdefault(sentence.passage, []).append(sentence)
        used += cost
    result = []
    for index, source in enumerate(sources):
        if index in chosen:
            text = " ".join(s.text for s in sorted(chosen[index], key=lambda s: s.start))
            result.append(replace(source, text=text))
    return result


def supporting_sentence(answer: str, ranked: Sequence[Sentence], cited: Sequence[int]) -> Sentence | None:
    """The sentence to quote under a generated answer: the best one of a cited source holding
    the answer's words, else the best of a cited source, else the best one."""
    words = set(re.findall(r"\w+", answer.lower()))
    pool = [s for s in ranked if s.passage + 1 in cited] or list(ranked)
    for sentence in pool:
        if words and words <= set(re.findall(r"\w+", sentence.text.lower())):
            return sentence
    return pool[0] if pool else None
