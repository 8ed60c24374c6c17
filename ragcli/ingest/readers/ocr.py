"""OCR of scanned pages: images (.png .jpg .jpeg .tif .tiff) and PDF pages without a text layer.

Tesseract does the recognition, through pytesseract (Apache-2.0), and pypdfium2 (Apache-2.0 /
BSD, manylinux wheels, no system library) renders PDF pages to images; both come with the
``ragcli[ocr]`` extra, and Tesseract itself from the system (Debian/Ubuntu ``tesseract-ocr``,
Homebrew ``tesseract``). The languages are the ``ocr_languages`` setting ("eng", "eng+fra").

OCR is slow (seconds a page), so each page's text is cached under the cache folder, keyed by
the file's sha256 and the page number: an interrupted or failed OCR of a long scan resumes at
the page where it stopped. On a terminal, each page is announced on stderr as it starts.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from ragcli.errors import ReaderError
from ragcli.ingest.readers.base import build_document, open_regular, reader_error
from ragcli.types import Document
from ragcli.text import PAGE_BREAK

OCR_HINT = (
    "install OCR to read it: pip install 'ragcli[ocr]' and Tesseract "
    "(Debian/Ubuntu: apt install tesseract-ocr; macOS: brew install tesseract)"
)
RENDER_DPI = 300


class OcrUnavailable(ReaderError):
    """A scan needs OCR, which is not installed: the file is skipped, not failed."""


@functools.lru_cache(maxsize=1)
def ocr_available() -> bool:
    """pytesseract importable and a Tesseract binary on the PATH."""
    try:
        import pytesseract  # noqa: F401
    except ImportError:
        return False
    return shutil.which(os.environ.get("RAG_TESSERACT", "tesseract")) is not None


def _settings() -> tuple[str, Path]:
    from ragcli.config import load_settings

    settings = load_settings()
    return settings.get("ocr_languages") or "eng", Path(settings.cache_dir) / "ocr"


def file_digest(path: Path) -> str:
    with open_regular(path) as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _say(path: Path, number: int, total: int) -> None:
    """Per-page progress on a terminal only (quiet in a pipe)."""
    if sys.stderr.isatty():
        end = "\n" if number == total else ""
        print(f"\rOCR {path.name}: page {number}/{total}", end=end, file=sys.stderr, flush=True)


def ocr_pages(path: Path, numbers: Iterable[int], total: int, render: Callable[[int], Any]) -> dict[int, str]:
    """OCR the given 1-based pages, each cached once recognised.

    Args:
        path: the file (named in messages, hashed for the cache key).
        numbers: the pages to recognise.
        total: the file's page count, for progress.
        render: page number -> PIL image.

    Raises:
        OcrUnavailable: Tesseract or the extra is missing.
        ReaderError: Tesseract failed on a page (pages done before stay cached).
    """
    if not ocr_available():
        raise OcrUnavailable(f"{path}: scanned page without text; {OCR_HINT}")
    import pytesseract

    languages, cache = _settings()
    folder = cache / file_digest(path)
    texts: dict[int, str] = {}
    for number in numbers:
        cached = folder / f"{number}.{languages}.txt"
        if cached.is_file():
            texts[number] = cached.read_text(encoding="utf-8")
            continue
        _say(path, number, total)
        try:
            text = pytesseract.image_to_string(render(number), lang=languages)
        except (pytesseract.TesseractError, RuntimeError, OSError) as exc:
            raise reader_error(
                path, f"OCR failed on page {number} ({exc}); check ocr_languages={languages!r}"
            ) from exc
        folder.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(".tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(cached)
        texts[number] = text
    return texts


class ImageReader:
    """Reads scanned images through OCR; without Tesseract they are skipped with one line."""

    suffixes: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
    file_type = "image"
    version = "1"

    def read(self, path: Path) -> Document:
        """Raises: OcrUnavailable (skipped) or ReaderError: not an image, or OCR failed."""
        if not ocr_available():
            raise OcrUnavailable(f"{path}: image needs OCR; {OCR_HINT}")
        from PIL import Image, ImageSequence, UnidentifiedImageError

        try:
            with Image.open(path) as image:
                frames = [frame.convert("RGB") for frame in ImageSequence.Iterator(image)]
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise reader_error(path, f"not a readable image ({exc})") from exc
        texts = ocr_pages(path, range(1, len(frames) + 1), len(frames), lambda n: frames[n - 1])
        text = PAGE_BREAK.join(texts[n] for n in range(1, len(frames) + 1))
        return build_document(path, text, self.file_type, pages=len(frames), ocr=True)


def ocr_pdf(path: Path, blank: list[int], total: int) -> dict[int, str]:
    """OCR the PDF pages (1-based) that have no text layer, rendered with pypdfium2.

    Raises:
        OcrUnavailable: OCR is not installed.
        ReaderError: a page cannot be rendered or recognised.
    """
    if not ocr_available():
        raise OcrUnavailable(f"{path}: no text layer (scanned PDF?); {OCR_HINT}")
    try:
        import pypdfium2
    except ImportError as exc:
        raise OcrUnavailable(f"{path}: no text layer (scanned PDF?); {OCR_HINT}") from exc
    try:
        pdf = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError as exc:
        raise reader_error(path, f"cannot render PDF pages for OCR ({exc})") from exc
    try:
        return ocr_pages(path, blank, total, lambda n: pdf[n - 1].render(scale=RENDER_DPI / 72).to_pil())
    finally:
        pdf.close()
