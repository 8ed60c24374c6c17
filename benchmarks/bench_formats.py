"""Ingest throughput per format (rows, slides, chapters, messages or pages per CPU second), peak memory.

Usage::

    python benchmarks/bench_formats.py                      # every format at its default size
    python benchmarks/bench_formats.py --formats csv --csv-rows 1000000

For each format a file is generated, then ingested by a fresh `rag ingest` process (the CLI's
own `main`) whose CPU time and peak RSS are read from the kernel (`wait4` rusage). Everything
real runs: the reader, splitting with the real model's tokenizer, BM25, SQLite, FAISS. Only
the ONNX inference is replaced by hashed vectors (as in bench_ingest_memory.py): its cost does
not depend on the format. The baseline is the ingest of one small text file.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest_memory import child  # noqa: E402  (the hashed-vector `rag ingest`)

WORDS = "harbour lantern quartz meadow copper violet pepper walnut saddle timber orchid comet".split()


def _sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choices(WORDS, k=n)) + f" {rng.randrange(10**6)}."


def make_csv(path: Path, rows: int, rng: random.Random) -> int:
    with path.open("w", encoding="utf-8") as handle:
        handle.write("id,city,product,amount,date\n")
        for i in range(rows):
            handle.write(
                f"{i},city{i % 977},{rng.choice(WORDS)} {i % 131},{i * 1.37:.2f},2024-{1 + i % 12:02d}-01\n"
            )
    return rows


def make_xlsx(path: Path, rows: int, rng: random.Random) -> int:
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Data")
    sheet.append(["id", "city", "product", "amount"])
    for i in range(rows):
        sheet.append([i, f"city{i % 977}", rng.choice(WORDS), i * 1.37])
    book.save(path)
    return rows


def make_ods(path: Path, rows: int, rng: random.Random) -> int:
    ns = (
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    )

    def row(*cells) -> str:
        inner = "".join(f"<table:table-cell><text:p>{c}</text:p></table:table-cell>" for c in cells)
        return f"<table:table-row>{inner}</table:table-row>"

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.spreadsheet", zipfile.ZIP_STORED
        )
        with archive.open("content.xml", "w") as out:
            head = f"<office:document-content {ns}><office:body><office:spreadsheet>"
            out.write((head + '<table:table table:name="Data">').encode())
            out.write(row("id", "city", "product").encode())
            for i in range(rows):
                out.write(row(i, f"city{i % 977}", rng.choice(WORDS)).encode())
            out.write(b"</table:table></office:spreadsheet></office:body></office:document-content>")
    return rows


def make_pptx(path: Path, slides: int, rng: random.Random) -> int:
    from pptx import Presentation

    deck = Presentation()
    for n in range(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide title {n} {rng.choice(WORDS)}"
        slide.placeholders[1].text = "\n".join(_sentence(rng) for _ in range(5))
        slide.notes_slide.notes_text_frame.text = _sentence(rng)
    deck.save(path)
    return slides


def make_epub(path: Path, chapters: int, rng: random.Random) -> int:
    manifest = "".join(
        f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(chapters)
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(chapters))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", zipfile.ZIP_STORED)
        archive.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0"><rootfiles>'
            '<rootfile full-path="book.opf"/></rootfiles></container>',
        )
        archive.writestr(
            "book.opf",
            '<package xmlns="http://www.idpf.org/2007/opf"><metadata/>'
            f"<manifest>{manifest}</manifest><spine>{spine}</spine></package>",
        )
        for i in range(chapters):
            body = "".join(f"<p>{_sentence(rng, 20)}</p>" for _ in range(30))
            archive.writestr(
                f"c{i}.xhtml", f"<html><head><title>Chapter {i}</title></head><body>{body}</body></html>"
            )
    return chapters


def make_mbox(path: Path, messages: int, rng: random.Random) -> int:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(messages):
            handle.write(
                f"From sender{i}@example.com Mon Apr 15 10:00:00 2024\nFrom: sender{i}@example.com\n"
                f"To: team@example.com\nSubject: Note {i}\nDate: Mon, 15 Apr 2024 10:00:00 +0000\n\n"
                + "\n".join(_sentence(rng) for _ in range(8))
                + "\n\n"
            )
    return messages


def make_code(path: Path, lines: int, rng: random.Random) -> int:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(lines // 3):
            handle.write(
                f"def {rng.choice(WORDS)}_{i}(value):\n    # {_sentence(rng, 6)}\n    return value * {i}\n"
            )
    return lines


def make_scans(path: Path, pages: int, rng: random.Random) -> int:
    """Pages of fresh random text: OCR'd pages are cached by file hash, so a rerun must differ."""
    from PIL import Image, ImageDraw, ImageFont

    rng = random.Random()
    font = ImageFont.load_default(size=40)
    frames = []
    for _ in range(pages):
        image = Image.new("L", (2480, 3508), 255)  # A4 at 300 dpi
        draw = ImageDraw.Draw(image)
        for line in range(40):
            draw.text((150, 150 + line * 80), _sentence(rng, 8), fill=0, font=font)
        frames.append(image)
    frames[0].save(path, save_all=True, append_images=frames[1:])
    return pages


FORMATS = {
    # name: (file name, maker, unit, size option)
    "csv": ("data.csv", make_csv, "rows", "csv_rows"),
    "xlsx": ("data.xlsx", make_xlsx, "rows", "rows"),
    "ods": ("data.ods", make_ods, "rows", "rows"),
    "pptx": ("deck.pptx", make_pptx, "slides", "slides"),
    "epub": ("book.epub", make_epub, "chapters", "chapters"),
    "mbox": ("mail.mbox", make_mbox, "messages", "messages"),
    "code": ("module.py", make_code, "lines", "code_lines"),
    "ocr": ("scan.tiff", make_scans, "pages", "ocr_pages"),
}


def run(file: Path, index: Path) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of one `rag ingest` process."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", str(file), str(index)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ingest of {file} failed: {process.stderr.read().decode()[-2000:]}")
    failed = process.stderr.read().decode()
    if " 0 failed;" not in failed:
        raise SystemExit(f"ingest of {file} reported failures: {failed[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated: " + ", ".join(FORMATS))
    parser.add_argument("--csv-rows", type=int, default=1_000_000)
    parser.add_argument("--rows", type=int, default=50_000, help="rows of the .xlsx and .ods sheets")
    parser.add_argument("--slides", type=int, default=300)
    parser.add_argument("--chapters", type=int, default=200)
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--code-lines", type=int, default=30_000)
    parser.add_argument("--ocr-pages", type=int, default=3)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    names = [name for name in args.formats.split(",") if name]
    if "ocr" in names and shutil.which("tesseract") is None:
        print("ocr: skipped (Tesseract is not installed)")
        names.remove("ocr")
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="ragcli-formats-") as tmp:
        folder = Path(tmp)
        (folder / "base.txt").write_text("A small baseline file about harbours.\n")
        base_seconds, baseline = run(folder / "base.txt", folder / "index-base")
        print(
            f"baseline (one small text file): {baseline:.0f} MB peak RSS, {base_seconds:.1f} CPU s (start-up)"
        )
        print(
            f"{'format':>7} {'size':>18} {'CPU s':>7} {'per CPU s':>16} {'peak MB':>8} {'over baseline':>14}"
        )
        for name in names:
            file_name, make, unit, option = FORMATS[name]
            file = folder / file_name
            count = make(file, getattr(args, option), rng)
            seconds, peak = run(file, folder / f"index-{name}")
            seconds = max(seconds - base_seconds, 0.01)  # the format's work, without the start-up
            rate = count / seconds
            rate_text = f"{rate:,.1f} {unit}" if rate < 100 else f"{rate:,.0f} {unit}"
            print(
                f"{name:>7} {f'{count:,} {unit}':>18} {seconds:7.1f} {rate_text:>16} "
                f"{peak:8.0f} {peak - baseline:14.0f}",
                flush=True,
            )
            file.unlink()


if __name__ == "__main__":
    main()
