"""Plain text files (.txt, .text, .rst).

Decoding is strict on purpose: UTF-8, UTF-8 with a BOM, and UTF-16/UTF-32 with a BOM.
Anything else is reported, not guessed. A legacy 8-bit file (latin-1, cp1252) decodes
"successfully" under every single-byte codec, so a guess can silently index mojibake
that no query will ever match; one clear error per file is the better failure.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from ragcli.readers.base import build_document, read_bytes, reader_error
from ragcli.types import Document

# Longest BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def has_unicode_bom(data: bytes) -> bool:
    """Return True if `data` starts with a UTF-8/16/32 byte-order mark."""
    return any(data.startswith(bom) for bom, _ in _BOMS)


def decode_text(data: bytes, path: Path) -> str:
    """Decode file bytes as UTF-8, or as the Unicode encoding its BOM names.

    Args:
        data: The raw file contents.
        path: The file, named in the error message.

    Returns:
        The decoded text, without the BOM.

    Raises:
        ReaderError: The bytes are not valid in the chosen encoding; the message gives
            the first bad byte and its offset so the file can be fixed.
    """
    encoding, start = "utf-8", 0
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding, start = name, len(bom)
            break
    try:
        return data[start:].decode(encoding)
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        label = "UTF-8" if encoding == "utf-8" else encoding.upper()
        reason = (
            f"not valid {label} text (byte 0x{data[offset]:02x} at offset {offset}); "
            "convert it to UTF-8, e.g. `iconv -f latin1 -t utf-8 in.txt > out.txt`"
        )
        raise reader_error(path, reason) from exc


def read_text_file(path: Path) -> str:
    """Read and decode a text file (see `decode_text`).

    Raises:
        ReaderError: The file cannot be read or decoded.
    """
    return decode_text(read_bytes(path), path)


class TextReader:
    """Reads plain text files as they are."""

    suffixes: tuple[str, ...] = (".txt", ".text", ".rst")
    file_type = "txt"
    version = "1"

    def read(self, path: Path) -> Document:
        """Read a plain text file into a Document.

        Raises:
            ReaderError: The file cannot be read or is not valid Unicode text.
        """
        return build_document(path, read_text_file(path), self.file_type)
