"""Rich Text Format (.rtf), read with striprtf.

striprtf (BSD-3-Clause) is a small pure-Python RTF-to-text converter that keeps paragraphs
and decodes the code-page and Unicode escapes; RTF is plain 7-bit text, so the file is
decoded as latin-1 (every byte maps) and the escapes carry the real characters.
"""

from __future__ import annotations

from pathlib import Path

from ragcli.ingest.readers.base import build_document, read_bytes, reader_error
from ragcli.types import Document


class RtfReader:
    """Reads the text of RTF documents."""

    suffixes: tuple[str, ...] = (".rtf",)
    file_type = "rtf"
    version = "1"

    def read(self, path: Path) -> Document:
        """Raises: ReaderError: the file cannot be read or is not RTF."""
        from striprtf.striprtf import rtf_to_text

        data = read_bytes(path)
        if not data.lstrip().startswith(b"{\\rtf"):
            raise reader_error(path, "not an RTF file (it does not start with {\\rtf); re-save it as .rtf")
        try:
            text = rtf_to_text(data.decode("latin-1"), errors="replace")
        except (ValueError, IndexError, LookupError, RecursionError) as exc:
            raise reader_error(path, f"corrupt RTF ({exc or type(exc).__name__}); re-save it") from exc
        return build_document(path, text, self.file_type)
