"""E-books (.epub): chapters in spine order, one page per chapter, chapter titles kept.

An EPUB is a zip of XHTML files listed, in reading order, by the spine of its OPF package
file. It is read here with the standard library's zipfile (after the container checks of
`ragcli.ingest.readers.containers`), defusedxml for the container and package XML, and the
same selectolax extraction as `.html` for each chapter. The usual library, ebooklib, is
AGPL-licensed, which an Apache-2.0 tool cannot depend on; the format needs only this much.
"""

from __future__ import annotations

import posixpath
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ragcli.ingest.readers.base import build_document, reader_error
from ragcli.ingest.readers.containers import local_name, opened_container, parse_xml, read_member
from ragcli.ingest.readers.html import extract_html
from ragcli.types import Document
from ragcli.text import PAGE_BREAK

_HTML_TYPES = {"application/xhtml+xml", "text/html", "application/x-dtbook+xml"}


def _package_path(path: Path, archive: zipfile.ZipFile) -> str:
    container = parse_xml(path, read_member(path, archive, "META-INF/container.xml"))
    for element in container.iter():
        if local_name(element.tag) == "rootfile" and element.get("full-path"):
            return element.get("full-path")
    raise reader_error(path, "not a valid EPUB (no package file in META-INF/container.xml)")


def _spine(path: Path, package: Any, base: str) -> tuple[list[str], str | None]:
    """Member names of the spine's documents in reading order, and the book title."""
    manifest: dict[str, tuple[str, str]] = {}
    order: list[str] = []
    title = None
    for element in package.iter():
        name = local_name(element.tag)
        if name == "item":
            href = posixpath.normpath(posixpath.join(base, unquote(element.get("href", ""))))
            manifest[element.get("id", "")] = (href, element.get("media-type", ""))
        elif name == "itemref" and element.get("linear", "yes") != "no":
            order.append(element.get("idref", ""))
        elif name == "title" and title is None and (element.text or "").strip():
            title = element.text.strip()
    members = [manifest[ref][0] for ref in order if ref in manifest and manifest[ref][1] in _HTML_TYPES]
    if not members:
        raise reader_error(path, "not a valid EPUB (its spine lists no chapters)")
    return members, title


def chapter_page(number: int, html: str) -> str:
    """A chapter as a page: ``Chapter N: title`` (its first heading) then its text, where that
    heading is not repeated: twice in a row, a heading heads nothing the first time."""
    text, title = extract_html(html, chapter=True)
    heading = f"Chapter {number}: {title}" if title else f"Chapter {number}"
    first, _, rest = text.partition("\n")
    if title and first.strip() == title:
        text = rest.strip()
    return f"{heading}\n\n{text}"


class EpubReader:
    """Reads EPUB 2 and 3 books, one page per spine chapter."""

    suffixes: tuple[str, ...] = (".epub",)
    file_type = "epub"
    version = "3"  # 2: a chapter's title is its first heading, not its <title>; 3: only its <main>

    def read(self, path: Path) -> Document:
        """Raises: ReaderError: not an EPUB, DRM-encrypted, corrupt or over the container limits."""
        with opened_container(path, "EPUB", "re-export it as .epub") as archive:
            if "META-INF/encryption.xml" in archive.namelist():
                raise reader_error(path, "encrypted (DRM) EPUB; only DRM-free books can be read")
            package_name = _package_path(path, archive)
            package = parse_xml(path, read_member(path, archive, package_name))
            members, title = _spine(path, package, posixpath.dirname(package_name))
            pages = []
            for number, member in enumerate(members, 1):
                html = read_member(path, archive, member).decode("utf-8", errors="replace")
                pages.append(chapter_page(number, html))
        return build_document(
            path,
            PAGE_BREAK.join(pages),
            self.file_type,
            title=title,
            pages=len(pages),
            chapters=len(pages),
        )
