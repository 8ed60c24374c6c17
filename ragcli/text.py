"""Text conventions every stage shares, so no stage imports another for them.

Readers write `PAGE_BREAK` between the pages of a document (PDF pages, slides, sheets,
chapters); splitting, citations and `rag get` count pages by it. `SENTENCE_ENDS` are the
characters that end a sentence, for the splitter and the answer's support check alike.
A file read as several documents (a mailbox's messages, a mail's attachments) stores its
parts under ``FILE`` + `PART_SEPARATOR` + ``N``; pruning, `rag rm` and `rag open` find the file by it.
`valid_unicode` makes text from argv, stdin or a file name safe to tokenize, store and print.
"""

from __future__ import annotations

PAGE_BREAK = "\f"
SENTENCE_ENDS = ".!?。！？"
PART_SEPARATOR = "#"


def valid_unicode(text: str) -> str:
    """`text` with lone surrogates (bytes that were not UTF-8 in argv, stdin or a file name)
    replaced by U+FFFD, so it can be tokenized, stored and printed; valid text is unchanged."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
