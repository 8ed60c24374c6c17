"""What completes the best sentence in its own document, and the chosen sentences' budget.

`complete` adds, after the best sentence of an evidence answer (`ragcli.answer.evidence`): the
list a sentence introduces (items' own lines first), else the sentences after it in its section
and the one before it, and what a sentence pointing back leans on. `Selection` holds the
sentences chosen so far within a character budget, each with its label line, and quotes a
sentence two sources share once.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Sequence

from ragcli.answer.context import Source
from ragcli.answer.sentences import Sentence
from ragcli.text import ROMAN_NUMERAL

# The sentences after (and before) the best one in its section that complete it; with the
# budget and three passages read, chosen on docs-qa's tune half (answered 0.29 -> 0.42).
FOLLOWING = 2
PRECEDING = 1
# At most this many lines after a sentence introducing a list are read as that list.
LIST_LINES = 40
# An unmarked list item is a phrase or a short sentence, not a paragraph of prose.
ITEM_CHARS = 100
# A step's number: "2.", "2)", "(2)", "2.1." (an outline's), or a roman numeral ("IV.", "iv)").
_NUMBER = rf"\d{{1,3}}(?:\.\d{{1,3}})*[.)]|\(\d{{1,3}}\)|(?:{ROMAN_NUMERAL})[.)]"
_NUMBERED = re.compile(rf"^\s*(?:{_NUMBER})\s")
# A list item: a bullet, a number, or a letter ("a)", "B.", "(c)").
_LIST_ITEM = re.compile(rf"^\s*(?:[-*+\u2022]|{_NUMBER}|[A-Za-z][.)]|\([A-Za-z]\))\s")


_CODE_FENCES = ("```", "~~~")


def is_title(text: str) -> bool:
    """A heading or a title line ("Victoria (Australia)"): short, no full stop; no evidence. A
    fenced code block (a Markdown example, "```bash\\n@scope/name\\n```") is none, however
    short: it is what the sentence before it announces ("..., e.g."), not a section's title."""
    text = text.strip()
    if is_list_item(text) or text.startswith(_CODE_FENCES):
        return False
    short = len(text.split()) < 5 and len(text) < 40  # (CJK text has no spaces: count characters too)
    return text.startswith("#") or (short and not text.endswith((".", "!", "?", ":", "。", "！", "？")))


def is_numbered(text: str) -> bool:
    """A numbered line, a step of a procedure ("2. Add the salt", "(3) Push")."""
    return bool(_NUMBERED.match(text))


def is_list_item(text: str) -> bool:
    """A bulleted or numbered line ("- 500 g flour", "2. Add the salt")."""
    return bool(_LIST_ITEM.match(text))


class Selection:
    """The sentences chosen so far, within a character budget."""

    def __init__(
        self,
        budget: int,
        label: Callable[[Sentence], Sentence | None] | None = None,
        sources: Sequence[Source] = (),
    ) -> None:
        self.left = budget
        self.sources: list[Source] = list(sources)  # the numbered sources the sentences come from
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
        label = self._label(sentence)
        # The sentence before its label: the first chosen is the best sentence, which the
        # reader reads its short line from (lines are rendered in document order anyway).
        pieces = [sentence] if label is None or self.has(label) else [sentence, label]
        cost = sum(len(piece.text) + 6 for piece in pieces)
        if self.chosen and cost > self.left:
            return False
        self.chosen += pieces
        self.left -= cost
        return True

    def add_list(self, items: Iterable[Sentence], passage: int) -> None:
        """Add a list's items in order while they fit; when one does not, the list of source
        `passage` is marked as cut short (the answer then says it continues)."""
        for item in items:
            if not self.add(item):
                self.cut.add(passage)
                return

    def add_whole(self, sentences: Sequence[Sentence]) -> bool:
        """Add all of `sentences` (those not chosen yet) when they fit together, else none: part
        of a list quoted alone ("* Type: Number" without the "* Default: 2" above it) says less
        than nothing of it."""
        new = [s for s in sentences if not self.has(s)]
        labels = {label.start: label for label in map(self._label, new) if label is not None}
        pieces = new + [label for label in labels.values() if not self.has(label) and label not in new]
        if self.chosen and sum(len(piece.text) + 6 for piece in pieces) > self.left:
            return False
        return all([self.add(s) for s in new])

    def _label(self, sentence: Sentence) -> Sentence | None:
        return self.label(sentence) if self.label is not None else None

    def drop(self, sentence: Sentence) -> None:
        """Take a chosen sentence back out, returning its room to the budget."""
        if sentence in self.chosen:
            self.chosen.remove(sentence)
            self.left += len(sentence.text) + 6


def _same_words(text: str, words: str) -> bool:
    """The same sentence, or one cut short by a chunk's end (a prefix of 40+ characters)."""
    other = " ".join(text.split())
    shorter, longer = sorted((other, words), key=len)
    return shorter == longer or (len(shorter) >= 40 and longer.startswith(shorter))


def _list_start(in_order: Sequence[Sentence], at: int) -> int:
    """The position of the first item of the list the item at `at` belongs to."""
    while at > 0 and is_list_item(in_order[at - 1].text):
        at -= 1
    return at


def _list_run(in_order: Sequence[Sentence], at: int) -> list[Sentence]:
    """The list items that follow position `at` (the sentence introducing them, or an item)."""
    run = []
    for sentence in in_order[at + 1 :]:
        if not is_list_item(sentence.text):
            break
        run.append(sentence)
    return run


def list_of(item: Sentence, every: Sequence[Sentence]) -> list[Sentence]:
    """The whole list a list item belongs to, in document order (`every`: its document's
    sentences in order); empty when the item is not among them."""
    at = next((i for i, s in enumerate(every) if s.start == item.start), None)
    if at is None:
        return []
    first = _list_start(every, at)
    return [every[first]] + _list_run(every, first)


def whole_steps(chosen: Selection, documents: Sequence[Sequence[Sentence]]) -> None:
    """Each numbered list a chosen item belongs to, whole: a step quoted alone ("5. Bake ...") is
    a procedure cut in the middle. Its other steps join in document order, or, when the budget
    ends, the answer says the list continues."""
    for item in [s for s in chosen.chosen if is_numbered(s.text)]:
        steps = list_of(item, documents[item.passage])
        chosen.add_list((s for s in steps if not chosen.has(s)), item.passage)


def steps_after(best: Sentence, every: Sequence[Sentence], text: str) -> list[Sentence]:
    """The numbered list that first follows the best sentence in its passage, on its page, whole
    (empty when none does): a how-to page often states what a procedure is for, then gives its
    steps under a heading of their own ("Steps", "Procedure"), where nothing repeats the
    question's words.

    Args:
        best: the best sentence.
        every: its passage's sentences in document order.
        text: the passage.
    """
    page_end = text.find("\f", best.start)
    for sentence in every:
        if sentence.start > best.start and (page_end < 0 or sentence.start < page_end):
            if is_numbered(sentence.text):
                return list_of(sentence, every)
    return []


def _list_block(block: Sequence[Sentence], chosen: Selection, passage: int) -> None:
    """A list after its introduction: the items' own lines (bullets, numbers, a definition
    list's terms) first, then what explains them, all in document order; cut when the budget
    ends, which the answer then says."""
    heads = [s for s in block if is_list_item(s.text) or is_title(s.text)]
    chosen.add_list(heads + [s for s in block if s not in heads], passage)


def introduces_list(sentence: Sentence) -> bool:
    """A sentence ending with a colon announces what follows (a list, steps, an example), and
    so does one ending with "e.g." or "for example": written one sentence a line, a page puts
    the example on the lines after it ("... followed by a slash, e.g." over a code block)."""
    return bool(_ANNOUNCES.search(sentence.text.rstrip()))


# The end of a sentence that announces what follows it.
_ANNOUNCES = re.compile(r"(?::|\b(?:e\.g\.|i\.e\.|for example,?|for instance,?))$", re.IGNORECASE)


def announced_lists(chosen: Selection, documents: Sequence[Sequence[Sentence]]) -> None:
    """Each chosen sentence whose next sentence announces a list ("Type= Configures the start-up
    type." then "One of simple, exec, forking or idle:") brings that sentence: a reference entry
    names its subject first and enumerates its values, options or fields after it, so for a
    question asking for several things the enumeration is the answer. (`bring_lists` then brings
    the list's items.)"""
    for sentence in list(chosen.chosen):
        every = documents[sentence.passage]
        after = next((s for s in every if s.start > sentence.start), None)
        if after is not None and introduces_list(after) and not is_title(sentence.text):
            chosen.add(ranked_copy(after, every))


def bring_list(intro: Sentence, every: Sequence[Sentence], chosen: Selection) -> None:
    """The list after its introduction: a marked list's items only, else the lines after it."""
    following = [s for s in every if s.start > intro.start]
    if following and is_list_item(following[0].text):
        following = _list_run(following, -1)
    _list_block(following[:LIST_LINES], chosen, intro.passage)


def bring_lists(chosen: Selection, documents: Sequence[Sequence[Sentence]]) -> None:
    """A chosen sentence that announces what follows ("... levels are available, including:")
    brings it, as the best sentence does: its list's items (marked, or `unmarked_items`), else
    the one line after it (an example, a command). One whose list does not fit at all is taken
    back out: quoted alone, it points at an answer without giving it."""
    for intro in [s for s in chosen.chosen[1:] if introduces_list(s)]:
        every = documents[intro.passage]
        after = [s for s in every if s.start > intro.start]
        if not after or chosen.has(after[0]):
            continue  # the document ends there, or what it announces is quoted already
        was_cut = intro.passage in chosen.cut
        unmarked = unmarked_items(after, chosen.sources[intro.passage].text)
        if is_list_item(after[0].text):
            bring_list(intro, every, chosen)
        elif len(unmarked) > 1:
            chosen.add_list(unmarked, intro.passage)
        else:
            chosen.add(after[0])
        if not chosen.has(after[0]):
            chosen.drop(intro)
            if not was_cut:
                chosen.cut.discard(intro.passage)


def unmarked_items(after: Sequence[Sentence], text: str) -> list[Sentence]:
    """The items of a list without bullets or numbers after its introduction: the sentences
    after it that each stand alone as a paragraph, are short (`ITEM_CHARS`) and announce
    nothing themselves. A web page's list items are read as paragraphs of their own, with no
    mark to tell them from the prose after them; so the run counts only where prose ends it in
    the passage (a run to the passage's end may be a page's footer lines, or a list cut short)."""
    items = []
    for sentence in after[:LIST_LINES]:
        end = sentence.start + len(sentence.text)
        before, following = text.rfind("\n\n", 0, sentence.start), text.find("\n\n", end)
        paragraph = text[before + 1 if before >= 0 else 0 : following if following >= 0 else len(text)]
        if len(sentence.text) > ITEM_CHARS or paragraph.strip() != sentence.text or introduces_list(sentence):
            return items
        items.append(sentence)
    return items if len(after) > LIST_LINES else []


def complete(
    best: Sentence,
    in_order: Sequence[Sentence],
    text: str,
    chosen: Selection,
    every: Sequence[Sentence] = (),
) -> None:
    """Add what completes the best sentence in its own document (see the module docstring).

    `every` is all the source's sentences in document order, headings and terms included."""
    at = next(i for i, s in enumerate(in_order) if s.start == best.start)
    if introduces_list(best):
        bring_list(best, every, chosen)
        return
    if is_list_item(best.text):  # back to the list's first item and its introduction
        at = _list_start(in_order, at)
        if at > 0 and in_order[at - 1].text.rstrip().endswith(":"):
            at -= 1
        chosen.add(in_order[at])
        _list_block(_list_run(in_order, at), chosen, best.passage)
        return
    section = _section(best, every, text)
    following = [s for s in section if s.start > best.start]
    before = [s for s in section if s.start < best.start]
    for sentence in following[:FOLLOWING]:
        if is_list_item(sentence.text):  # a list after the sentence comes whole, or not at all
            chosen.add_whole([ranked_copy(s, in_order) for s in list_of(sentence, every) or [sentence]])
            break
        if not chosen.add(ranked_copy(sentence, in_order)):
            return
        if introduces_list(sentence):  # "... The variants are as follows:"
            bring_list(sentence, every, chosen)
            return
    first = best
    for sentence in reversed(before[-PRECEDING:] if PRECEDING else []):
        # The list right above the sentence (an option's "* Default: 2", "* Type: Number"), whole.
        items = (list_of(sentence, every) or [sentence]) if is_list_item(sentence.text) else [sentence]
        if not chosen.add_whole([ranked_copy(s, in_order) for s in items]):
            return
        first = items[0]
    earlier = [s for s in before if s.start < first.start]
    while earlier and refers_back(first.text) and chosen.add(ranked_copy(earlier[-1], in_order)):
        first = earlier.pop()


# Words that open a sentence leaning on the one before it ("This makes ...", "They should ...",
# "To achieve this, ...", "To do so, ...", "For this we use ..."): quoted alone, such a sentence
# does not say what it is about.
_REFERS_BACK = re.compile(
    r"^[\"'(]*(?:this|that|these|those|it|they|such|thus|hence|therefore|otherwise|"
    r"to (?:\w+ ){1,2}(?:this|that|it|so)|(?:for|with|by|after) (?:this|that|these|those))\b",
    re.IGNORECASE,
)


def refers_back(text: str) -> bool:
    """Whether a sentence opens by pointing back at the one before it."""
    return bool(_REFERS_BACK.match(text.strip()))


def join_leaning(chosen: Selection, documents: Sequence[Sequence[Sentence]]) -> None:
    """Each chosen sentence with the sentences leaning on each other around it, as the best
    sentence has: the one before a sentence that opens by pointing back ("To do so, log in ...")
    and the one after it that points back at it ("The next step is to upload the crate." ->
    "For this we use the publish command."). Quoted apart, the first says not what it is
    about, the second leaves out how. Neither crosses a heading or a page break."""
    for sentence in [s for s in chosen.chosen if not is_title(s.text)]:
        every, text = documents[sentence.passage], chosen.sources[sentence.passage].text
        at = next((i for i, s in enumerate(every) if s.start == sentence.start), None)
        if at is None:
            continue
        back = at
        while back > 0 and refers_back(every[back].text) and _joined(every[back - 1], every[back], text):
            if not chosen.add(every[back - 1]):
                break
            back -= 1
        ahead = at
        while ahead + 1 < len(every) and refers_back(every[ahead + 1].text):
            if not _joined(every[ahead], every[ahead + 1], text) or not chosen.add(every[ahead + 1]):
                break
            ahead += 1


def _joined(first: Sentence, second: Sentence, text: str) -> bool:
    """Whether two neighbouring sentences read on from one to the other: no heading between
    them and no page break."""
    return (
        not is_title(first.text)
        and not is_title(second.text)
        and "\f" not in text[first.start : second.start]
    )


def _section(best: Sentence, every: Sequence[Sentence], text: str) -> list[Sentence]:
    """The sentences between the headings around the best sentence (a heading, or a term of a
    definition list, starts a section), on its page: a source is cited with one page, so a
    sentence from the next page (a PDF page, a slide, a sheet) would be cited to the wrong one."""
    first, last = text.rfind("\f", 0, best.start), text.find("\f", best.start)
    page = [s for s in every if first < s.start and (last < 0 or s.start < last)]
    start = max((i for i, s in enumerate(page) if s.start <= best.start and is_title(s.text)), default=-1)
    end = next((i for i, s in enumerate(page) if s.start > best.start and is_title(s.text)), len(page))
    return [s for s in page[start + 1 : end] if not is_title(s.text)]


def ranked_copy(sentence: Sentence, in_order: Sequence[Sentence]) -> Sentence:
    """The scored copy of a sentence, when it was scored."""
    return next((s for s in in_order if s.start == sentence.start), sentence)
