"""Plain text files (.txt, .text, .rst).

Decoding is strict on purpose: UTF-8, UTF-8 with a BOM, UTF-16/UTF-32 with a BOM, and
UTF-16 without one when its NUL bytes show the byte order (`sniff_utf16`).
Anything else is reported, not guessed. A legacy 8-bit file (latin-1, cp1252) decodes
"successfully" under every single-byte codec, so a guess can silently index mojibake
that no query will ever match; one clear error per file is the better failure.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from ragcli.ingest.readers.base import build_document, read_bytes, reader_error
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


def sniff_utf16(data: bytes) -> str | None:
    """The UTF-16 byte order of BOM-less text, judged by where its NUL bytes fall, else None.

    Latin-script UTF-16 has a NUL in one half of most code units (the high byte of "a" is 0):
    all NULs at odd offsets is little-endian, all at even offsets big-endian. A binary file
    has NULs on both sides; UTF-8 text has none. Text with no NUL at all (e.g. mostly CJK)
    cannot be told from other bytes this way and is left to the UTF-8 check.
    """
    sample = data[: len(data) - len(data) % 2]
    pairs = len(sample) // 2
    if pairs < 2:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd * 2 >= pairs and even == 0:
        order = "utf-16-le"
    elif even * 2 >= pairs and odd == 0:
        order = "utf-16-be"
    else:
        return None
    try:
        text = sample.decode(order)
    except UnicodeDecodeError:
        return None
    # Text has no control characters but layout ones; binary that passed the NUL test has.
    if any(ord(c) < 32 and c not in "\t\n\r\f" for c in text):
        return None
    return order


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
    else:
        if b"\x00" in data[:8192]:
            encoding = sniff_utf16(data[:8192]) or encoding
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


# Largest text file (txt, md, html) read: reading holds the bytes and the decoded text (up to
# 4 bytes a character), and splitting copies the text into chunks, so a 64 MB file peaks at a
# few hundred MB; a larger one is refused with one line rather than risk the machine's memory.
MAX_TEXT_FILE_BYTES = 64 * 1024 * 1024


def read_text_file(path: Path) -> str:
    """Read and decode a text file (see `decode_text`).

    Raises:
        ReaderError: The file cannot be read or decoded, or is over `MAX_TEXT_FILE_BYTES`.
    """
    return decode_text(read_bytes(path, MAX_TEXT_FILE_BYTES), path)


class TextReader:
    """Reads plain text files as they are, titled by their file name.

    Plain text has no markup to name it, so its file name is its only title (`ls.1.txt` is
    `ls.1`, `vpn-setup.txt` is `vpn-setup`); as every title, it joins the BM25 terms of the
    file's chunks, so a passage deep in a long file still matches a question naming the file's
    subject (`what does ls -h do`), as a titled HTML or Markdown page's passages do.
    """

    suffixes: tuple[str, ...] = (".txt", ".text", ".rst")
    file_type = "txt"
    version = "2"  # 2: titled by the file name

    def read(self, path: Path) -> Document:
        """Read a plain text file into a Document.

        Raises:
            ReaderError: The file cannot be read or is not valid Unicode text.
        """
        return build_document(path, read_text_file(path), self.file_type, title=path.stem)
