"""Mail: single messages (.eml) and mailboxes (.mbox), read with the standard library.

Each message is one document with ``from``, ``to``, ``date`` (ISO-8601 UTC) and ``subject`` in
its metadata, so ``--filter from=alice@example.com`` and ``--filter 'date>=2024-01-01'`` work.
The plain-text body is preferred; an HTML-only body is cleaned as an .html file is.
Attachments of a supported type become documents of their own, linked to their message
(``message`` in their metadata, path ``MAIL#N/NAME``); a part bigger than
`MAX_ATTACHMENT_BYTES` is left out with a note in the message's metadata.

A file yields several documents (`read_all`): the first one is stored under the file's own
path, the others under ``FILE#N`` (message N of a mailbox) and ``FILE#N/NAME`` (an attachment).
Outlook .msg files are not read: no maintained reader under a permissive licence exists.
"""

from __future__ import annotations

import email
import email.policy
import mailbox
import tempfile
from datetime import timezone
from email.message import EmailMessage
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path, PurePath
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ragcli.errors import ReaderError
from ragcli.ingest.readers.base import build_document, open_regular, read_bytes, reader_error
from ragcli.text import PART_SEPARATOR
from ragcli.types import Document

MAX_ATTACHMENT_BYTES = 20_000_000


def _addresses(message: EmailMessage, header: str) -> list[str]:
    return [address.lower() for _, address in getaddresses(message.get_all(header, [])) if address]


def _date(message: EmailMessage) -> str | None:
    try:
        parsed = parsedate_to_datetime(str(message["date"]))
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).isoformat(timespec="seconds")


def _body(message: EmailMessage) -> str:
    """The plain-text body, else the HTML body cleaned as for .html, else ""."""
    from ragcli.ingest.readers.html import extract_html

    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):
        content = part.get_payload(decode=True).decode("utf-8", errors="replace")
    return extract_html(content)[0] if part.get_content_type() == "text/html" else content


def _people(message: EmailMessage, header: str) -> list[str]:
    """A header's people as the text shows them: "Jürgen Müller <j.mueller@firma.de>", so a
    question naming the sender finds the message (the metadata keeps the bare addresses)."""
    return [
        f"{' '.join(name.split())} <{address.lower()}>" if name.strip() else address.lower()
        for name, address in getaddresses(message.get_all(header, []))
        if address
    ]


def _header_block(fields: dict[str, Any]) -> str:
    lines = [
        f"{name.capitalize()}: {', '.join(v) if isinstance(v, list) else v}"
        for name, v in fields.items()
        if v
    ]
    return "\n".join(lines)


def message_document(path: Path, part_path: str, message: EmailMessage, file_type: str) -> Document:
    """One message as a document: headers as metadata and as a first block of text."""
    fields = {
        "from": _addresses(message, "from"),
        "to": _addresses(message, "to") + _addresses(message, "cc"),
        "date": _date(message),
        "subject": " ".join(str(message["subject"] or "").split()) or None,
    }
    people = {"from": _people(message, "from"), "to": _people(message, "to") + _people(message, "cc")}
    shown = {**fields, **people}
    text = _header_block(shown) + "\n\n" + _body(message)
    document = build_document(path, text, file_type, title=fields["subject"], **fields)
    return Document(part_path, document.text, document.file_type, document.metadata)


@dataclass(frozen=True)
class Attachments:
    """How attachments are read: which names have a reader, and the reader of every format
    (given by the registry, which imports this module: no import cycle)."""

    supports: Callable[[str], bool] = lambda name: False
    read: Callable[[Path], Document] | None = None


def attachment_documents(
    part_path: str, message_path: str, message: EmailMessage, attachments: Attachments
) -> Iterator[Document]:
    """Documents for the message's attachments of a supported type (read from a temporary file),
    under ``part_path/NAME``; their `message` is `message_path`, where the message is stored (an
    .eml's is the file's own path, not ``FILE#1``), so `rag get` takes it."""
    for number, part in enumerate(message.iter_attachments(), 1):
        name = PurePath(part.get_filename() or f"attachment-{number}").name
        if attachments.read is None or not attachments.supports(name):
            continue
        payload = part.get_payload(decode=True) or b""
        if len(payload) > MAX_ATTACHMENT_BYTES:
            continue
        with tempfile.TemporaryDirectory(prefix="ragcli-mail-") as folder:
            temporary = Path(folder) / name
            temporary.write_bytes(payload)
            try:
                document = attachments.read(temporary)
            except ReaderError:
                continue
        metadata = {**document.metadata, "message": message_path, "file_name": name}
        yield Document(f"{part_path}/{name}", document.text, document.file_type, metadata)


def _parse(data: bytes) -> EmailMessage:
    return email.message_from_bytes(data, policy=email.policy.default)  # type: ignore[return-value]


class _MailFileReader:
    """What the .eml and .mbox readers share: the attachment readers, and `read` as the first
    document of `read_all` (which the subclass defines)."""

    file_type: str

    def __init__(self, attachments: Attachments = Attachments()):
        self.attachments = attachments

    def read(self, path: Path) -> Document:
        """The (first) message alone. Raises: ReaderError: unreadable, empty or not mail."""
        return next(self.read_all(path))

    def read_all(self, path: Path) -> Iterator[Document]:
        raise NotImplementedError


class MailReader(_MailFileReader):
    """Reads one .eml message and its supported attachments."""

    suffixes: tuple[str, ...] = (".eml",)
    file_type = "eml"
    # 2: an attachment's `message` names the stored message (was FILE#1 for an .eml)
    # 3: the text shows each person's name with the address ("Jürgen Müller <j.mueller@firma.de>")
    version = "3"

    def read_all(self, path: Path) -> Iterator[Document]:
        """The message (under the file's path), then its attachments (``FILE#1/NAME``)."""
        message = _parse(read_bytes(path))
        if not message.keys():
            raise reader_error(path, "not a mail message (no headers); save it as .eml")
        yield message_document(path, str(path), message, self.file_type)
        yield from attachment_documents(f"{path}{PART_SEPARATOR}1", str(path), message, self.attachments)


class MboxReader(_MailFileReader):
    """Reads every message of an mbox mailbox, one document each."""

    suffixes: tuple[str, ...] = (".mbox",)
    file_type = "mbox"
    # 2: an attachment's `message` names the stored message (was FILE#1 for an .eml)
    # 3: the text shows each person's name with the address ("Jürgen Müller <j.mueller@firma.de>")
    version = "3"

    def read_all(self, path: Path) -> Iterator[Document]:
        """Message 1 under the file's path, message N under ``FILE#N``, attachments after each."""
        open_regular(path).close()  # a regular, readable file (one clear line otherwise)
        box = mailbox.mbox(str(path), factory=None, create=False)
        count = 0
        try:
            for key in box.iterkeys():
                count += 1
                message = _parse(box.get_bytes(key))
                part_path = str(path) if count == 1 else f"{path}{PART_SEPARATOR}{count}"
                yield message_document(path, part_path, message, self.file_type)
                yield from attachment_documents(
                    f"{path}{PART_SEPARATOR}{count}", part_path, message, self.attachments
                )
        except (OSError, ValueError, mailbox.Error) as exc:
            raise reader_error(path, f"malformed mbox ({exc}); messages before it were read") from exc
        finally:
            box.close()
        if count == 0:
            raise reader_error(path, "not an mbox mailbox (no message starts with a 'From ' line)")
