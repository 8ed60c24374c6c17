"""Rich Text Format (.rtf), read with striprtf.

striprtf (BSD-3-Clause) is a small pure-Python RTF-to-text converter that keeps paragraphs
and decodes the code-page and Unicode escapes (``\\'e9``, ``\\u8364``). RTF is meant to be 7-bit
text whose escapes carry the other characters, but some programs write those characters as
raw bytes; such a byte is in the document's code page (``\\ansicpg1251``; Windows-1252 when
none is named, Mac Roman for ``\\mac``), so the file is decoded with it.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from ragcli.ingest.readers.base import build_document, read_bytes, reader_error
from ragcli.types import Document


_CODE_PAGE = re.compile(rb"\\ansicpg(\d+)")
_HEADER = 4096  # the code page is declared in the header, before the font table


def _encoding(data: bytes) -> str:
    """The code page of the file's raw 8-bit bytes."""
    header = data[:_HEADER]
    match = _CODE_PAGE.search(header)
    if match:
        try:
            return codecs.lookup(f"cp{int(match.group(1))}").name
        except LookupError:
            pass
    return "mac_roman" if re.match(rb"\s*\{\\rtf1?\\mac(?![a-z])", header) else "cp1252"


class RtfReader:
    """Reads the text of RTF documents."""

    suffixes: tuple[str, ...] = (".rtf",)
    file_type = "rtf"
    version = "2"  # 2: raw 8-bit bytes are read in the document's code page, not as latin-1

    def read(self, path: Path) -> Document:
        """Raises: ReaderError: the file cannot be read or is not RTF."""
        from striprtf.striprtf import rtf_to_text

        data = read_bytes(path)
        if not data.lstrip().startswith(b"{\\rtf"):
            raise reader_error(path, "not an RTF file (it does not start with {\\rtf); re-save it as .rtf")
        try:
            text = rtf_to_text(data.decode(_encoding(data), errors="replace"), errors="replace")
        except (ValueError, IndexError, LookupError, RecursionError) as exc:
            raise reader_error(path, f"corrupt RTF ({exc or type(exc).__name__}); re-save it") from exc
        return build_document(path, text, self.file_type)
