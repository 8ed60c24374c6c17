"""Text conventions every stage shares, so no stage imports another for them.

Readers write `PAGE_BREAK` between the pages of a document (PDF pages, slides, sheets,
chapters); splitting, citations and `rag get` count pages by it. `sentence_spans` is the one
sentence splitter, for ingest's sentence windows, the answer's evidence and its support check
alike.
A file read as several documents (a mailbox's messages, a mail's attachments) stores its
parts under ``FILE`` + `PART_SEPARATOR` + ``N``; pruning, `rag rm` and `rag open` find the file by it.
`valid_unicode` makes text from argv, stdin or a file name safe to tokenize, store and print.
"""

from __future__ import annotations

import re

PAGE_BREAK = "\f"
PART_SEPARATOR = "#"
# Spreadsheet readers write one ``row N: Header: value; ...`` line per record
# (`ragcli.ingest.readers.records`); each such line is a sentence of its own.
RECORD_LINE = re.compile(r"row \d+: ")
# Readers join a table row's cells with this (Word, HTML, slides); a row is a line of its own.
TABLE_CELLS = " | "


def valid_unicode(text: str) -> str:
    """`text` with lone surrogates (bytes that were not UTF-8 in argv, stdin or a file name)
    replaced by U+FFFD, so it can be tokenized, stored and printed; valid text is unchanged."""
    if text.isascii():  # a flag read: no copy of the text (every warm query passes here)
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        # Surrogates outside surrogateescape's U+DC80-U+DCFF (a JSON "\ud800" escape a client
        # decoded, a half of a split pair) stand for no byte: replaced first, or encoding fails.
        text = _UNESCAPED_SURROGATE.sub("\ufffd", text)
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


_UNESCAPED_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


# A sentence ends at ".", "!" or "?" followed by whitespace and an upper-case letter, a digit, a
# quote or a letter outside ASCII ("É", "中"; a lower-case ASCII letter after it marks an
# abbreviation: "e.g. this"), at a full-width terminator, or at a line break before a blank line,
# a list item, a heading, a table row or a sheet's record: a single break inside a paragraph is
# line wrapping.
# A list item's roman numeral ("IV", "iv"), before its "." or ")"; the answer step reads these too.
ROMAN_NUMERAL = r"[IVXLC]{1,6}|[ivxlc]{1,6}"
_SENTENCE_END = re.compile(
    r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?(?:[A-Z0-9]|[^\x00-\x7f]))|(?<=[。！？])|"
    r"\n\s*\n\s*|\n(?=\s*(?:[-*+#>|]|(?:\d+(?:\.\d+)*|" + ROMAN_NUMERAL + r"|[A-Za-z])[.)])\s)|"
    r"\n(?=[\"'(\[]?[A-Z0-9])|\n(?=row \d+: )"
)
# A line this short without a full stop, followed by a capitalised line, is a title.
TITLE_CHARS = 60
# A blank line ends a sentence, whatever comes before it ("... to 72 °C.", "... by J. R. R.").
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")
# "U.S. Army", "Dr. Smith", "St. Louis": a period after initials or a title ends no sentence; a
# unit's letter after a degree sign ("72 °C. Stir") is no initial. "e.g." and "i.e." introduce
# what follows them, often a name ("a version control system (e.g. Git)"), and never end one.
_ABBREVIATION = re.compile(
    r"(?:(?<!°)\b(?:[A-Z]\.){1,3}|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Mt|No|vs|v|Gen|Col|Lt|Rev|[Ee]\.g|[Ii]\.e)\.)"
    r"[\"')\]]*$"
)
# What starts a line of its own, never a wrapped paragraph's next line: a bullet, a heading,
# a quote or table row, or an item's number ("2.", "b)") with a space after it. A long list
# item that ends without a full stop ("* Runs AFTER `prepack`") is followed by the next item,
# not by the rest of its own sentence.
_BLOCK_START = re.compile(r"\s*(?:[-*+#>|]|(?:\d+(?:\.\d+)*|" + ROMAN_NUMERAL + r"|[A-Za-z])[.)])\s")
# A list item's number at a line's start: "2.", "2.1.", "IV.", "iv)", "b)".
_ITEM_NUMBER = re.compile(r"\s*(?:\d{1,3}(?:\.\d{1,3})*|" + ROMAN_NUMERAL + r"|[A-Za-z])[.)]")
# How far back from a sentence end an abbreviation or a list item's number can start: the
# checks look no further, so splitting a long text stays linear.
_LOOK_BACK = 16


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character ``(start, end)`` of each non-empty sentence of `text`, stripped: "3.14",
    "U.S. Army" and a numbered item's "2." stay whole, and so does a fenced code block
    (```` ``` ```` or ``~~~``), whose lines are code, not prose. Linear in ``len(text)``."""
    if "```" not in text and "~~~" not in text:
        return _prose_spans(text)
    result, start = [], 0
    for block_start, block_end in code_blocks(text):
        result += [(start + a, start + b) for a, b in _prose_spans(text[start:block_start])]
        block = text[block_start:block_end].strip()
        if block:
            offset = block_start + text[block_start:block_end].index(block[0])
            result.append((offset, offset + len(block)))
        start = block_end
    return result + [(start + a, start + b) for a, b in _prose_spans(text[start:])]


def code_blocks(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each fenced code block of `text`, fences included.

    A block runs from a line opening with ``` or ~~~ to the next line of the same fence alone,
    or to the end of the text. `text` may be a passage cut from a document: one that ends
    inside a block ends the block; one that starts inside a block starts with a block up to
    its first fence when that fence is bare and a blank line follows it (an opening fence is
    followed by its code, a closing one by the prose after the block).
    """
    blocks, opened = [], None
    for number, fence in enumerate(_FENCE_LINE.finditer(text)):
        bare = not fence.group(2).strip()
        if opened is None:
            if number == 0 and bare and _BLANK_LINE_AFTER.match(text, fence.end()):
                blocks.append((0, fence.end()))
            else:
                opened = fence
        elif bare and fence.group(1)[0] == opened.group(1)[0] and len(fence.group(1)) >= len(opened.group(1)):
            blocks.append((opened.start(), fence.end()))
            opened = None
    if opened is not None:
        blocks.append((opened.start(), len(text)))
    return blocks


def code_lines(sentence: str) -> list[str] | None:
    """The non-blank lines of code of a sentence that is a code block (`code_blocks`), its
    fences left out; None for any other sentence."""
    lines = sentence.strip().split("\n")
    opens, closes = _FENCE_LINE.fullmatch(lines[0]), len(lines) > 1 and _FENCE_LINE.fullmatch(lines[-1])
    if not (opens or (closes and not closes.group(2).strip())):
        return None
    inner = lines[1 if opens else 0 : -1 if closes else None]
    return [line.rstrip() for line in inner if line.strip()]


_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n]*)$", re.M)
_BLANK_LINE_AFTER = re.compile(r"\n[^\S\n]*\n")


def _prose_spans(text: str) -> list[tuple[int, int]]:
    """`sentence_spans` of text without code blocks."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if _PARAGRAPH_BREAK.search(match.group()) is None and (
            _abbreviated(text, match) or _wrapped(text, match) or _list_number(text, match)
        ):
            continue
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    result = []
    for begin, end in spans:
        piece = text[begin:end]
        stripped = piece.strip()
        if stripped:
            offset = begin + piece.index(stripped[0])
            result.append((offset, offset + len(stripped)))
    return result


def _abbreviated(text: str, match: re.Match) -> bool:
    return _ABBREVIATION.search(text, max(0, match.start() - _LOOK_BACK), match.start()) is not None


def _list_number(text: str, match: re.Match) -> bool:
    """The period of a list item's number ("2. Add the salt", "IV. Submit") ends no sentence."""
    end = match.start()
    line_start = text.rfind("\n", max(0, end - _LOOK_BACK), end) + 1
    if line_start == 0 and end > _LOOK_BACK:  # the line started further back: no item number
        return False
    return bool(_ITEM_NUMBER.fullmatch(text[line_start:end]))


def _wrapped(text: str, match: re.Match) -> bool:
    """A single line break inside a paragraph (the line before is long, not a title, and does
    not end by introducing what follows with a colon: "check the following items:")."""
    if match.group() != "\n" or text[match.start() - 1 : match.start()] in (".", "!", "?", ":"):
        return False
    if RECORD_LINE.match(text, match.end()):  # records are long lines, never wrapped prose
        return False
    if _BLOCK_START.match(text, match.end()):  # a list item, heading or table row starts a line
        return False
    # A page break starts a line too: a page's heading follows the last line of the page before.
    line_start = max(text.rfind("\n", 0, match.start()), text.rfind(PAGE_BREAK, 0, match.start())) + 1
    if TABLE_CELLS in text[line_start : match.start()]:  # a table's row ends at its line's end
        return False
    return match.start() - line_start >= TITLE_CHARS
