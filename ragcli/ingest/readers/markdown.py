"""Markdown files (.md, .markdown).

The markdown source is kept as the document text (headings, lists and tables read fine
as prose and the markers help the passage splitter). A front matter block is metadata,
not prose, so it is removed from the text; its ``title`` wins over the first ``# ``
heading.
"""

from __future__ import annotations

import re
from pathlib import Path

from ragcli.ingest.readers.base import build_document
from ragcli.ingest.readers.text import read_text_file
from ragcli.types import Document

# YAML (---) or TOML (+++) front matter at the very start of the file.
_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\n(.*?)\n(?:---|\.\.\.|\+\+\+)[ \t]*(?:\n|\Z)", re.DOTALL)
# Only the title is needed, so one scalar key is matched rather than pulling in a YAML
# parser; quotes around the value are optional.
_TITLE_KEY = re.compile(r"""^title\s*[:=]\s*(["']?)(.*?)\1\s*$""", re.MULTILINE)
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Split a leading front matter block from the markdown body.

    Returns:
        ``(front_matter, body)``; ``front_matter`` is None when there is none.
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None, text
    # The blank line after the block only separated it from the body.
    return match.group(2), text[match.end() :].lstrip("\n")


def front_matter_title(front_matter: str) -> str | None:
    """Return the ``title`` value of a front matter block, if it has one."""
    match = _TITLE_KEY.search(front_matter)
    return (match.group(2).strip() or None) if match else None


def first_heading(body: str) -> str | None:
    """Return the text of the first level-one ``# `` heading outside code fences."""
    in_fence = False
    for line in body.splitlines():
        if _FENCE.match(line):
            # A "# comment" inside a shell example is not a heading.
            in_fence = not in_fence
        elif not in_fence and (match := _ATX_H1.match(line)):
            return match.group(1).strip()
    return None


class MarkdownReader:
    """Reads markdown files, with the title from front matter or the first heading."""

    suffixes: tuple[str, ...] = (".md", ".markdown")
    file_type = "md"
    version = "1"

    def read(self, path: Path) -> Document:
        """Read a markdown file into a Document.

        Raises:
            ReaderError: The file cannot be read or is not valid Unicode text.
        """
        # Normalise line endings before matching, so CRLF files parse like LF ones.
        text = read_text_file(path).replace("\r\n", "\n")
        front_matter, body = split_front_matter(text)
        title = front_matter_title(front_matter) if front_matter else None
        return build_document(path, body, self.file_type, title=title or first_heading(body))
