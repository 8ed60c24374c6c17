"""The structure of a retrieved passage around a sentence: the label its paragraph sits under.

Reference documentation is full of definition lists: a short line naming a term, an option or
a setting ("--depth <depth>", "merge.renameLimit", "pre-commit"), then a paragraph describing
it. The description alone rarely says what it describes ("Create a shallow clone with a
history truncated to the specified number of commits."), so a quoted description brings its
label line with it (`paragraph_label`).
"""

from __future__ import annotations

from typing import Sequence

from ragcli.answer.completion import is_list_item
from ragcli.answer.sentences import Sentence

# A label is one line of at most this many characters, without a sentence's final punctuation.
LABEL_CHARS = 80
_SENTENCE_END = (".", "!", "?", ";", ",", "。", "！", "？")


def is_label(text: str) -> bool:
    """A term line of a definition list or a heading: one short line that ends no sentence. A
    bulleted or numbered line is an item of a list, not the label of what follows it."""
    text = text.strip()
    short_line = bool(text) and "\n" not in text and len(text) <= LABEL_CHARS
    return short_line and not text.endswith(_SENTENCE_END) and not is_list_item(text)


def _same_paragraph(text: str, before: Sentence, after: Sentence) -> bool:
    """No blank line and no page break between the two: a PDF's text has no blank lines, and a
    heading on an earlier page heads nothing on this one."""
    gap = text[before.start + len(before.text) : after.start]
    return "\n\n" not in gap.replace("\r", "") and "\f" not in gap


def paragraph_label(sentence: Sentence, every: Sequence[Sentence], text: str) -> Sentence | None:
    """The label line right before the paragraph holding `sentence`, if there is one.

    Args:
        sentence: a sentence of `text`.
        every: all sentences of `text`, in document order.
        text: the passage.
    """
    at = next((i for i, s in enumerate(every) if s.start == sentence.start), None)
    if at is None or is_label(every[at].text):
        return None
    while at > 0 and _same_paragraph(text, every[at - 1], every[at]) and not is_label(every[at - 1].text):
        at -= 1
    if at < 2:  # the passage's first line is a document's title more often than a term
        return None
    previous = every[at - 1]
    return previous if is_label(previous.text) else None
