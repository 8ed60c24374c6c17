"""Zip containers (.docx .pptx .xlsx .xlsm .ods .odt .epub) checked before any parser sees them.

Office and e-book files are zip archives of XML. A hostile one can be small on disk and
expand to gigabytes (a zip bomb), or declare XML entities that expand exponentially or read
local files (`<!ENTITY x SYSTEM "file:///etc/hostname">`). Every zip reader therefore opens
its file through `open_container`, which refuses, with one line naming the file and the
limit, an archive that is over the limits below or whose XML declares any entity, before a
parser runs. XML this package parses itself goes through defusedxml (`parse_xml`,
`iter_xml`), which refuses entity declarations and external references.

The declared uncompressed sizes are safe to trust: Python's zipfile stops reading a member
at its declared size, so a member that lies about its size yields no more than it declared.
"""

from __future__ import annotations

import functools
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator

from ragcli.ingest.readers.base import open_regular, reader_error

DEFAULT_MAX_BYTES = 200_000_000
DEFAULT_MAX_MEMBERS = 10_000
DEFAULT_MAX_RATIO = 100
# Small members compress far better than 100:1 when they are mostly markup; the ratio is only
# a zip-bomb signal for members big enough to matter.
RATIO_FLOOR_BYTES = 1_000_000
_XML_SUFFIXES = (".xml", ".rels", ".opf", ".ncx", ".xhtml", ".htm", ".html", ".svg")
_ENTITY = b"<!ENTITY"
_SCAN_BLOCK = 1 << 16


@dataclass(frozen=True)
class ContainerLimits:
    """What a zip container may hold (settings `zip_max_bytes`, `zip_max_members`, `zip_max_ratio`)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_members: int = DEFAULT_MAX_MEMBERS
    max_ratio: int = DEFAULT_MAX_RATIO


@functools.lru_cache(maxsize=1)
def container_limits() -> ContainerLimits:
    """The limits from the settings (config file, `RAG_ZIP_MAX_*` environment), read once."""
    from ragcli.config import load_settings

    settings = load_settings()
    return ContainerLimits(
        max_bytes=settings.get("zip_max_bytes") or DEFAULT_MAX_BYTES,
        max_members=settings.get("zip_max_members") or DEFAULT_MAX_MEMBERS,
        max_ratio=settings.get("zip_max_ratio") or DEFAULT_MAX_RATIO,
    )


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.0f} MB"


def check_members(path: Path, archive: zipfile.ZipFile, limits: ContainerLimits) -> None:
    """Refuse an archive over the member count, total size or per-member ratio limit.

    Raises:
        ReaderError: names the file and the limit it exceeds, and the setting that raises it.
    """
    members = archive.infolist()
    if len(members) > limits.max_members:
        raise reader_error(
            path,
            f"zip container has {len(members)} members, over the limit of "
            f"{limits.max_members} (zip_max_members)",
        )
    total = sum(member.file_size for member in members)
    if total > limits.max_bytes:
        raise reader_error(
            path,
            f"zip container expands to {_megabytes(total)}, over the limit of "
            f"{_megabytes(limits.max_bytes)} (zip_max_bytes); refused as a possible zip bomb",
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > RATIO_FLOOR_BYTES and ratio > limits.max_ratio:
            raise reader_error(
                path,
                f"zip member {member.filename} compresses {ratio:.0f}:1, over the limit of "
                f"{limits.max_ratio}:1 (zip_max_ratio); refused as a possible zip bomb",
            )


def _declares_entity(stream: IO[bytes]) -> bool:
    """Whether an XML stream declares an entity, read in blocks (memory stays constant)."""
    tail = b""
    while block := stream.read(_SCAN_BLOCK):
        if _ENTITY in (tail + block).upper():
            return True
        tail = block[-len(_ENTITY) :]
    return False


def check_xml_members(path: Path, archive: zipfile.ZipFile) -> None:
    """Refuse a container whose XML declares entities (entity bombs, external files).

    Office, OpenDocument and EPUB XML never needs its own entities; a declaration is a sign
    of a hostile file, and refusing it keeps every parser (ours or a library's) safe.

    Raises:
        ReaderError: names the file and the member.
    """
    for member in archive.infolist():
        if member.filename.lower().endswith(_XML_SUFFIXES):
            with archive.open(member) as stream:
                if _declares_entity(stream):
                    raise reader_error(
                        path,
                        f"zip member {member.filename} declares XML entities; refused "
                        "(entity expansion and external entities are never read)",
                    )


def open_container(path: Path, kind: str, hint: str) -> zipfile.ZipFile:
    """Open a zip container, checked against the limits and for XML entities.

    Args:
        path: the file.
        kind: what the file should be, for the message ("PowerPoint .pptx").
        hint: how to fix a file that is not a zip at all ("re-save it as .pptx").

    Raises:
        ReaderError: not a zip (e.g. a password-protected Office file, which is an OLE file),
            corrupt, over a limit, or with entity declarations.
    """
    handle = open_regular(path)
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        handle.close()
        encrypted = _is_ole(path)
        reason = (
            f"password-protected or legacy binary file, not a {kind} zip package; save an unprotected copy"
            if encrypted
            else f"not a valid {kind} file ({exc}); {hint}"
        )
        raise reader_error(path, reason) from exc
    try:
        check_members(path, archive, container_limits())
        check_xml_members(path, archive)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
        archive.close()
        raise reader_error(path, f"corrupt {kind} file ({exc}); {hint}") from exc
    except BaseException:
        archive.close()
        raise
    return archive


@contextmanager
def opened_container(
    path: Path, kind: str, hint: str, invalid: tuple[type[BaseException], ...] = ()
) -> Iterator[zipfile.ZipFile]:
    """`open_container` for the block, closed after it.

    Args:
        invalid: what the format's library raises on a malformed package; inside the block,
            these become one ReaderError line ("not a valid KIND file (...); HINT").
    """
    archive = open_container(path, kind, hint)
    try:
        yield archive
    except invalid as exc:
        raise reader_error(path, f"not a valid {kind} file ({exc or type(exc).__name__}); {hint}") from exc
    finally:
        archive.close()


def check_container(path: Path, kind: str, hint: str) -> None:
    """`open_container` for a reader whose library opens the file itself (python-docx ...)."""
    open_container(path, kind, hint).close()


def _is_ole(path: Path) -> bool:
    """An OLE compound file: how Office stores encrypted documents and legacy .doc/.ppt/.xls."""
    try:
        with open_regular(path) as handle:
            return handle.read(8) == bytes.fromhex("d0cf11e0a1b11ae1")
    except Exception:
        return False


def read_member(path: Path, archive: zipfile.ZipFile, name: str) -> bytes:
    """A member's bytes (already within the container limits).

    Raises:
        ReaderError: the member is missing or corrupt.
    """
    try:
        return archive.read(name)
    except KeyError as exc:
        raise reader_error(path, f"corrupt file: member {name} is missing") from exc
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as exc:
        raise reader_error(path, f"corrupt file: member {name} cannot be read ({exc})") from exc


def parse_xml(path: Path, data: bytes) -> Any:
    """Parse XML with defusedxml: no entity expansion, no external entities, no network.

    Raises:
        ReaderError: the XML is malformed or declares entities.
    """
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import ParseError, fromstring

    try:
        return fromstring(data)
    except (ParseError, DefusedXmlException) as exc:
        raise reader_error(path, f"malformed or unsafe XML ({exc})") from exc


def iter_xml(path: Path, stream: IO[bytes]) -> Iterator[tuple[str, Any]]:
    """Stream ("start"/"end", element) events with defusedxml, for members too big to hold as a tree.

    The caller clears elements it has used, so memory stays bounded by one row or paragraph.

    Raises:
        ReaderError: the XML is malformed or declares entities.
    """
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import ParseError, iterparse

    try:
        yield from iterparse(stream, events=("start", "end"))
    except (ParseError, DefusedXmlException) as exc:
        raise reader_error(path, f"malformed or unsafe XML ({exc})") from exc


def local_name(tag: str) -> str:
    """`{namespace}name` -> `name`."""
    return tag.rsplit("}", 1)[-1]
