"""Evidence that answers: the passage of the retrieved text that answers the question, quoted.

The default answer without a capable model. A small model cannot write answers, but the
retrieved text holds them, so the answer a user sees is that text, chosen by its structure:

1. The best passages are numbered as sources and every sentence of them is scored against
   the question (`ragcli.answer.sentences`: the question's terms it covers and embedding
   similarity). When the best sentence is weak evidence, the answer abstains (`is_answerable`).
2. Each thing a comparison names that no chosen sentence describes gets its own description
   first (`ragcli.answer.comparison`), from a retrieved passage not read when none read has
   it (the asker also retrieves each side by its own name). The best sentence is completed
   from its own document (`complete`): a sentence that introduces a list (it ends with ":" or
   is a list item) brings the list (the items' own lines first: bullets, numbers, a definition
   list's terms); any other brings the sentences after it in its section (up to the next
   heading or term: the explaining sentence after a statement, a definition's next sentence,
   an option's description) and the one before it, and what a sentence pointing back leans
   on. A why-question gets the best sentence stating a reason (`gives_reason`) if none has.
3. Question terms still uncovered (the other side of a comparison) bring the best sentence
   that covers them, then sentences scoring nearly as well as the best fill what is left.
4. Any chosen sentence brings the neighbour pointing back at it or that it points back at
   (`join_leaning`), the list it announces (`bring_lists`), and a step, its whole procedure
   (`whole_steps`). All within a budget of characters (`AskOptions.evidence_chars`), quoted in
   document order, each line cited; a list cut short says so on a line of its own.

A short line (a number, date or name the question's wh-word asks for) may come first: the
reader decides it (`ragcli.answer.readers`), and only from the quoted evidence. Each citation's
page is the page the quoted sentence is on (PDF pages are ``\\f``-separated in the text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Mapping, Sequence

from ragcli.analysis import analyze
from ragcli.answer.comparison import missing_sides, side_description, side_names
from ragcli.answer.completion import (
    Selection,
    announced_lists,
    bring_lists,
    complete,
    introduces_list,
    is_numbered,
    is_title,
    join_leaning,
    ranked_copy,
    refers_back,
    steps_after,
    whole_steps,
)
from ragcli.answer.context import Source, build_context
from ragcli.answer.intent import asks, asks_for_several, asks_how_to, asks_why, gives_reason
from ragcli.answer.paging import split_at_quoted_pages
from ragcli.answer.sentences import Sentence, question_terms, score_sentences, sentences_of
from ragcli.answer.structure import is_label, paragraph_label
from ragcli.choices import EVIDENCE_CHARS
from ragcli.embedding.base import Embedder
from ragcli.types import Hit
from ragcli.text import code_lines

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
# The asker's words for themselves and whoever they ask ("how do I ...", "my project", "can you
# ..."): a question is put in the first or second person, the documentation answering it in the
# third or the imperative ("Run ..."), so its sentences seldom repeat these words.
PERSONAL = frozenset(analyze("i me my mine myself we us our ours you your yours"))
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
# A why-question gets the best sentence stating a reason (cue words of causal explanation, the
# strongest non-topical features for why-answers in Verberne et al., "What is not in the bag of
# words for why-QA?", Computational Linguistics 2010) when it scores this share of the best one's.
REASON_SHARE = 0.5


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


def covers_question(
    question: str, sentences: Sequence[Sentence], unheld: frozenset[str] = frozenset()
) -> bool:
    """Whether the best few sentences together hold `SPREAD_EVIDENCE` of the question's terms
    (both sides of a comparison are rarely in one sentence).

    The asker's words for themselves and whoever they ask (`PERSONAL`) are not required: one
    the sentences lack is left out of the count. A term of `unheld` (no chunk of the index
    holds it) left uncovered counts twice: the documents may never name that subject ("...
    using poetry"), or the asker put it in their own words ("roughly")."""
    terms, uncovered = question_terms(question), _uncovered(question, sentences)
    terms, uncovered = terms - (uncovered & PERSONAL), uncovered - PERSONAL
    weight = len(terms) + len(uncovered & unheld)  # a word the index lacks counts twice
    return bool(terms) and len(terms - uncovered) >= SPREAD_EVIDENCE * weight


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


def quote(sentence: Sentence, also: Sequence[int] = ()) -> str:
    """The sentence quoted and cited; `also`: other sources (0-based) saying the same words.
    A Markdown heading is quoted without its marks ("## Method" -> "Method"): its words are
    still the source's, word for word."""
    cited = " ".join(f"[{passage + 1}]" for passage in (sentence.passage, *also))
    code = code_lines(sentence.text)
    if code:  # a Markdown code block: its lines, one quote each (flattened, commands ran together)
        return "\n".join(f'"{line}" {cited}' for line in code)
    return f'"{" ".join(_HEADING_MARKS.sub("", sentence.text, count=1).split())}" {cited}'


_HEADING_MARKS = re.compile(r"^\s*#{1,6}\s+(?=\S)")


def rank_source_sentences(
    question: str,
    sources: Sequence[Source],
    *,
    embedder: Embedder | None = None,
    everywhere: frozenset[str] = frozenset(),
) -> list[Sentence]:
    """Every sentence of the sources (headings left out, but for headings that ask a question)
    scored against the question, best first; ``Sentence.passage`` is the index of its source.

    A heading asking a question ("## Can I grow tomatoes in pots?", a FAQ's entry) is scored: its
    answer below it often repeats none of its words ("Yes. Use a pot of at least 20 litres."), so
    without it a question asked as the page asks it was not answered. Chosen, it brings the
    sentences of its section (`complete`). `everywhere`: see `ragcli.answer.sentences.lexical_scores`."""
    texts = [source.text for source in sources]
    sentences, headings = [], []
    heading: dict[int, Sentence] = {}  # passage -> the heading over the sentences read so far
    for sentence in sentences_of(texts):
        title, asking = is_title(sentence.text), asks(sentence.text)
        if title or asking:
            heading[sentence.passage] = sentence
        over = heading.get(sentence.passage)
        if over is not None and "\f" in texts[sentence.passage][over.start : sentence.start]:
            over = None  # a heading on an earlier page
        if asking or not title:
            sentences.append(sentence)
            headings.append(over.text if over is not None and over is not sentence else "")
    return score_sentences(question, sentences, embedder=embedder, headings=headings, everywhere=everywhere)


def rank_sentences(
    question: str,
    hits: Sequence[Hit],
    *,
    embedder: Embedder | None = None,
    passages: int = 3,
    everywhere: frozenset[str] = frozenset(),
) -> tuple[tuple[Source, ...], list[Sentence]]:
    """The best `passages` hits as numbered sources, and all their sentences scored, best first."""
    sources = tuple(numbered_sources(hits, passages))
    return sources, rank_source_sentences(question, sources, embedder=embedder, everywhere=everywhere)


def _uncovered(question: str, chosen: Sequence[Sentence]) -> set[str]:
    covered = {term for sentence in chosen for term in analyze(sentence.text)}
    return question_terms(question) - covered


def select_evidence(
    question: str,
    sources: Sequence[Source],
    ranked: Sequence[Sentence],
    budget: int,
    reserve: Sequence[Source] = (),
) -> Selection:
    """The best sentence, what completes it, what covers the rest of the question, then close runners-up.

    `reserve`: retrieved passages not read; one joins the sources (`Selection.sources`, numbered
    after them) when it alone describes a side of a comparison.
    """
    best = ranked[0]
    documents = [source_sentences(source, number) for number, source in enumerate(sources)]
    several = asks_for_several(question)
    chosen = Selection(
        int(budget * (SEVERAL_BUDGET if several else 1.0)),
        lambda s: paragraph_label(s, documents[s.passage], chosen.sources[s.passage].text),
        sources,
    )
    chosen.add(best)
    by_source: dict[int, list[Sentence]] = {}
    for sentence in ranked:
        by_source.setdefault(sentence.passage, []).append(sentence)
    in_order = sorted(by_source[best.passage], key=lambda s: s.start)
    every = documents[best.passage]
    for side in missing_sides(question, chosen.chosen):
        described = side_description(side, documents) or _from_reserve(side, reserve, chosen, documents)
        if described is not None:
            chosen.add(ranked_copy(described, by_source.get(described.passage, ())))
    complete(best, in_order, sources[best.passage].text, chosen, every)
    if asks_how_to(question) and not any(is_numbered(s.text) for s in chosen.chosen):
        chosen.add_list(steps_after(best, every, sources[best.passage].text), best.passage)
    if asks_why(question):
        _add_reason(ranked, best, chosen, documents)
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
    join_leaning(chosen, documents)
    describe_labels(chosen, documents)
    if several:
        announced_lists(chosen, documents)
    bring_lists(chosen, documents)
    whole_steps(chosen, documents)
    return chosen


def describe_labels(chosen: Selection, documents: Sequence[Sequence[Sentence]]) -> None:
    """A label line chosen for its words (a heading, a term) brings the first sentence it
    heads, or is taken back out when that does not fit: quoted alone, a heading points at an
    answer without giving it."""
    for label in [s for s in chosen.chosen[1:] if is_label(s.text) and not introduces_list(s)]:
        after = [s for s in documents[label.passage] if s.start > label.start]
        headed = after[: next((i for i, s in enumerate(after) if is_label(s.text)), len(after))]
        if not headed or any(chosen.has(s) for s in headed):
            continue  # a heading with nothing under it, or one quoted over its own sentence
        if not chosen.add(headed[0]):
            chosen.drop(label)


def unmentioned(question: str, hits: Sequence[Hit]) -> list[str]:
    """The sides a comparison names that no retrieved passage mentions at all: the answer
    says so, rather than let the other side's quotes pass for a comparison."""
    sides = [names[-1] for names in side_names(question)]
    if not sides:
        return []
    found = {term for hit in hits for term in analyze(hit.chunk.text)}
    return [side for side in sides if not set(analyze(side)) <= found]


def _add_reason(
    ranked: Sequence[Sentence], best: Sentence, chosen: Selection, documents: Sequence[Sequence[Sentence]]
) -> None:
    """The best-scoring sentence that states a reason, when none chosen does yet, with the
    sentence before it when it leans on that one ("This is because ...")."""
    if any(gives_reason(s.text) for s in chosen.chosen):
        return
    for sentence in ranked[1:]:
        if sentence.score < REASON_SHARE * best.score:
            return
        if gives_reason(sentence.text) and not chosen.has(sentence):
            before = [s for s in documents[sentence.passage] if s.start < sentence.start]
            if chosen.add(sentence) and before and refers_back(sentence.text):
                chosen.add(before[-1])
            return


def source_sentences(source: Source, number: int) -> list[Sentence]:
    """A source's sentences in document order, headings and terms included, as passage `number`."""
    return [replace(s, passage=number) for s in sentences_of([source.text])]


def _from_reserve(
    side: Sequence[str], reserve: Sequence[Source], chosen: Selection, documents: list[list[Sentence]]
) -> Sentence | None:
    """A side's description from a retrieved passage not read yet; that passage becomes the
    next source (numbered after those read)."""
    read = {chunk for source in chosen.sources for chunk in source.chunk_ids}
    for source in reserve:
        if read & set(source.chunk_ids):
            continue
        every = source_sentences(source, len(chosen.sources))
        found = side_description(side, [every])
        if found is not None:
            chosen.sources.append(replace(source, number=len(chosen.sources) + 1))
            documents.append(every)
            return found
    return None


def quoted_under(
    question: str,
    sources: Sequence[Source],
    ranked: Sequence[Sentence],
    support: Sentence,
    *,
    passages: int,
    budget: int,
) -> Selection:
    """The evidence quoted under a generated short answer: what the evidence style would quote
    (the best sentences of the first `passages` sources, completed), plus `support`, the
    sentence holding the model's words, when it is not among them.

    Anchoring the quote on the model's words instead lost answers a small model does not put
    in its line (steps, reasons, list items): with Qwen2.5-Coder-0.5B on the tune half of a
    real-question set, answered 0.47 anchored on the model's words, 0.55 anchored as here."""
    read = [s for s in ranked if s.passage < passages] or list(ranked)
    chosen = select_evidence(question, sources, read, budget)
    if chosen.add(support):
        documents = [source_sentences(source, number) for number, source in enumerate(chosen.sources)]
        whole_steps(chosen, documents)
    return chosen


def render(chosen: Selection) -> list[str]:
    """The quoted lines: sources in the order first chosen, each one's sentences in document
    order; the pieces of a source cut at its pages (`split_at_quoted_pages`) stay together."""
    first: dict[object, int] = {}
    for sentence in chosen.chosen:
        first.setdefault(_passage_of(chosen, sentence.passage), len(first))
    passages = {s.passage for s in chosen.chosen}
    order = sorted(passages, key=lambda p: (first[_passage_of(chosen, p)], p))
    lines = []
    for passage in order:
        mine = sorted((s for s in chosen.chosen if s.passage == passage), key=lambda s: s.start)
        lines += [quote(s, chosen.also.get((s.passage, s.start), ())) for s in mine]
        if passage in chosen.cut:
            lines.append(f"(the list continues in [{passage + 1}])")
    return lines


def _passage_of(chosen: Selection, number: int) -> object:
    """The retrieved passage source `number` is, or is a page's piece of (its chunks)."""
    if number >= len(chosen.sources):
        return number
    return (chosen.sources[number].path, chosen.sources[number].chunk_ids)


def answer_with_evidence(
    question: str,
    hits: Sequence[Hit],
    *,
    embedder: Embedder | None = None,
    passages: int = 3,
    budget: int = EVIDENCE_CHARS,
    reader: Reader | None = None,
    everywhere: frozenset[str] = frozenset(),
    unheld: frozenset[str] = frozenset(),
) -> Evidence:
    """The `rag ask` evidence stage (see the module docstring).

    Args:
        question: the question.
        hits: retrieved hits, best first.
        embedder: scores sentences by cosine too (None: lexical only).
        passages: how many of the best hits to read.
        budget: characters of quoted evidence.
        reader: gives the short line from the quoted evidence (None: no short line).
        everywhere: the question's terms nearly every chunk of the index holds
            (`ragcli.answer.sentences.index_held_terms`): every sentence counts as holding them.
        unheld: the question's terms no chunk of the index holds
            (`ragcli.answer.sentences.index_held_terms`; see `covers_question`).
    """
    sources, ranked = rank_sentences(
        question, hits, embedder=embedder, passages=passages, everywhere=everywhere
    )
    best = ranked[0] if ranked else None
    if best is None or not (is_answerable(best) or covers_question(question, ranked[:SPREAD], unheld)):
        return Evidence("", None, sources, True, (best,) if best else ())
    chosen = select_evidence(question, sources, ranked, budget, reserve=numbered_sources(hits, len(hits)))
    chosen = split_at_quoted_pages(chosen)
    sources = tuple(chosen.sources)
    short = reader.read(question, chosen.chosen) if reader is not None else None
    lines = render(chosen) + [f'(no passage found mentions "{side}")' for side in unmentioned(question, hits)]
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
