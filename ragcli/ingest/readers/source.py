"""Source code and structured text (.py .js .ts .go .rs .java .c .h .sh .toml .yaml .json .org .tex ...).

Read as UTF-8 text, as they are (indentation kept), with the language in the metadata so a
search can be narrowed to it: ``--filter language=python``.
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from ragcli.ingest.readers.base import build_document
from ragcli.ingest.readers.text import read_text_file
from ragcli.types import Document

LANGUAGES = MappingProxyType(
    {
        ".py": "python",
        ".pyi": "python",
        ".js": "javascript",
        ".mjs": "javascript",
        ".jsx": "javascript",
        ".ts": "typescript",
        ".tsx": "typescript",
        ".go": "go",
        ".rs": "rust",
        ".java": "java",
        ".c": "c",
        ".h": "c",
        ".cpp": "cpp",
        ".hpp": "cpp",
        ".sh": "shell",
        ".bash": "shell",
        ".toml": "toml",
        ".yaml": "yaml",
        ".yml": "yaml",
        ".json": "json",
        ".org": "org",
        ".tex": "tex",
    }
)


class SourceReader:
    """Reads source code and structured text files as text, with their language."""

    suffixes: tuple[str, ...] = tuple(LANGUAGES)
    file_type = "code"
    version = "1"

    def read(self, path: Path) -> Document:
        """Raises: ReaderError: the file cannot be read or is not valid Unicode text."""
        language = LANGUAGES[path.suffix.lower()]
        return build_document(path, read_text_file(path), self.file_type, language=language)
