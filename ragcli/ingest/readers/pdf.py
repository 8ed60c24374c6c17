"""PDF files, read with pypdf.

Pages are joined with a form feed (``\\f``) so the splitter and citations can recover
page numbers from character offsets. pypdf is imported when a PDF is read, not at
start-up.
"""

from __future__ import annotations


import struct
import zlib
from pathlib import Path
from typing import Any, BinaryIO

from ragcli.ingest.readers.base import build_document, open_regular, reader_error
from ragcli.types import Document
from ragcli.text import PAGE_BREAK


# pypdf signals a damaged file with its own errors but also, deep in the object parser,
# with plain Python ones; any of these on open or extraction means the file is corrupt.
_PARSER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    AssertionError,
    RecursionError,
    zlib.error,
    struct.error,
)


def _open(path: Path, handle: BinaryIO) -> Any:
    """Open a PDF and make sure its pages can be read (decrypting an empty password).

    pypdf reads from the open file as it needs (seeking), so a PDF of large images is never
    held in memory whole; `open_regular` accepts regular files only and never blocks."""
    from pypdf import PasswordType, PdfReader

    pdf = PdfReader(handle)
    # pypdf already tries the empty user password; a PDF that only restricts printing or
    # copying opens with it, one that needs a real password does not.
    if pdf.is_encrypted and pdf.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise reader_error(
            path,
            "encrypted PDF (a password is needed); save a decrypted copy, e.g. `qpdf --decrypt`",
        )
    return pdf


def _title(pdf: Any) -> str | None:
    """Return the document title from the PDF info dictionary, if set."""
    info = pdf.metadata
    title = info.title if info is not None else None
    return str(title) if title else None


def _page_texts(pdf: Any) -> list[str]:
    """Extract each page's text; a stray form feed inside a page becomes a newline."""
    return [(page.extract_text() or "").replace(PAGE_BREAK, "\n") for page in pdf.pages]


class PdfReader:
    """Reads the text layer of PDF files, one ``\\f``-separated section per page."""

    suffixes: tuple[str, ...] = (".pdf",)
    file_type = "pdf"
    version = "1"

    def read(self, path: Path) -> Document:
        """Read a PDF into a Document with a ``pages`` count in its metadata.

        Raises:
            ReaderError: The PDF is unreadable, corrupt, encrypted, has no pages, or has
                no text layer at all (a scan that needs OCR first).
        """
        from pypdf.errors import DependencyError, PyPdfError

        try:
            with open_regular(path) as handle:
                pdf = _open(path, handle)
                pages = _page_texts(pdf)
                title = _title(pdf)
        except OSError as exc:
            raise reader_error(path, f"cannot read file ({exc.strerror or exc})") from exc
        except DependencyError as exc:
            raise reader_error(path, f"encrypted PDF needs an extra package: {exc}") from exc
        except (PyPdfError, *_PARSER_ERRORS) as exc:
            raise reader_error(
                path,
                f"corrupt PDF: {exc or type(exc).__name__}; re-export or repair it",
            ) from exc
        if not pages:
            raise reader_error(path, "corrupt PDF: it has no pages")
        ocr = _fill_scanned_pages(path, pages)
        text = PAGE_BREAK.join(pages)
        return build_document(
            path, text, self.file_type, title=title, pages=len(pages), ocr_pages=ocr or None
        )


def _fill_scanned_pages(path: Path, pages: list[str]) -> list[int]:
    """OCR the pages without a text layer in place (when OCR is installed); their numbers.

    Raises:
        ReaderError: no page has text and OCR is not installed (one line naming the extra),
            or OCR failed.
    """
    from ragcli.ingest.readers.ocr import OCR_HINT, ocr_available, ocr_pdf

    blank = [number for number, text in enumerate(pages, 1) if not text.strip()]
    if not blank:
        return []
    if not ocr_available():
        if len(blank) == len(pages):
            raise reader_error(path, f"no text layer (scanned PDF?); {OCR_HINT}")
        return []
    for number, text in ocr_pdf(path, blank, len(pages)).items():
        pages[number - 1] = text.replace(PAGE_BREAK, "\n")
    if not any(text.strip() for text in pages):
        raise reader_error(path, "no text layer (scanned PDF?), and OCR found no text on its pages")
    return blank
