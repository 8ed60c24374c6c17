"""Every format ragcli reads, through the real `rag`: a word from each is found, citations name the
slide / sheet and rows / chapter / page, mail metadata filters work, and bad input is one line."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from format_files import (
    make_all,
    make_csv,
    make_eml,
    make_scan_png,
    make_xlsx,
    mail,
)
from typer.testing import CliRunner

from conftest import child_environ
from ragcli.cli import app
from runner import rag

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def docs(tmp_path) -> Path:
    """A folder to ingest, beside (not around) the test's index."""
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


def _ingest(folder: Path, *flags: str):
    return rag("ingest", str(folder), "--json", *flags)


def _hits(query: str, *flags: str) -> list[dict]:
    """`rag query --json` in this process (what the hits are; the exit codes are `_ingest`'s)."""
    result = CliRunner().invoke(app, ["query", query, "--mode", "bm25", "--json", *flags])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["hits"]


@pytest.fixture(scope="module")
def every_format(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formats")
    make_all(folder)
    return folder


@pytest.fixture(scope="module")
def every_format_index(every_format, tmp_path_factory, model_cache_dir):
    """`every_format` ingested once by the real `rag ingest --json`: (that run, its index).
    Read the index only; a test that writes copies it."""
    home = tmp_path_factory.mktemp("formats-index")
    env = child_environ(home, model_cache_dir)
    return rag("ingest", str(every_format), "--json", "--index", str(home / "index"), env=env), home / "index"


WORDS = {
    "zeppelin": ("deck.pptx", "Slide 2: Cargo volumes"),
    "marmalade": ("deck.pptx", "Rotterdam | marmalade"),
    "quokka": ("book.xlsx", "row 3: Region: Southwest; Q3 revenue: quokka"),
    "narwhal": ("book.xlsx", "Sheet: Staff (rows 2-2"),
    "capybara": ("cities.csv", "row 4: city: Lima; landmark: capybara"),
    "puffin": ("birds.ods", "Sheet: Birds (rows 1000002-1000003"),
    "rhubarb": ("garden.odt", "The rhubarb patch flourished."),
    "pomegranate": ("journeys.epub", "Chapter 2: Oasis"),
    "cormorant": ("keeper.rtf", "lighthouse keeper fed a cormorant"),
    "espresso": ("budget.eml", "Subject: Budget"),
    "sundial": ("budget.eml#1/minutes.txt", "approved the sundial"),
    "pelican": ("news.mbox#2", "From: carol@example.com"),
    "gravel_path": ("walk.py", "def gravel_path"),
}


def test_a_word_from_every_format_is_found_with_its_place(every_format, every_format_index):
    ingested, index = every_format_index
    assert ingested.returncode == 0, ingested.stderr
    assert json.loads(ingested.stdout)["failed"] == []
    for word, (name, place) in WORDS.items():
        hits = _hits(word, "--index", str(index))
        assert hits, word
        assert hits[0]["path"] == str(every_format / name), (word, hits[0]["path"])
        assert place in hits[0]["text"], (word, hits[0]["text"])


def test_slides_and_chapters_are_pages(every_format):
    """Split by page, a hit's page is its slide, chapter or sheet."""
    assert (
        _ingest(every_format, "--split-by", "page", "--chunk-size", "1", "--chunk-overlap", "0").returncode
        == 0
    )
    assert _hits("zeppelin")[0]["page"] == 2  # slide 2
    assert _hits("pomegranate")[0]["page"] == 2  # chapter 2
    assert _hits("narwhal")[0]["page"] == 2  # sheet 2, "Staff"
    status = rag("status", "--json")
    types = json.loads(status.stdout)["types"]
    assert {"pptx", "xlsx", "csv", "ods", "odt", "epub", "rtf", "eml", "mbox", "code"} <= set(types)


def test_mail_and_language_metadata_filter(every_format, every_format_index):
    ingested, index = every_format_index
    assert ingested.returncode == 0
    on_index = ("--index", str(index))
    assert [h["path"] for h in _hits("discussed", "--filter", "from=carol@example.com", *on_index)] == [
        str(every_format / "news.mbox#2")
    ]
    recent = {h["path"] for h in _hits("discussed", "--filter", "date>=2024-01-01", *on_index)}
    assert recent == {str(every_format / "news.mbox#2")}
    old = {h["path"] for h in _hits("discussed", "--filter", "date<=2023-01-10", *on_index)}
    assert old == {str(every_format / "news.mbox")}
    assert [h["path"] for h in _hits("gravel", "--filter", "language=python", *on_index)] == [
        str(every_format / "walk.py")
    ]


def test_address_filters_ignore_case_as_addresses_are_stored_in_lower_case(docs):
    note = mail("Alice <Alice@Example.com>", "Budget", "Mon, 15 Apr 2024 10:00:00 +0000", "A new kettle.")
    note.replace_header("To", "Team <Team@Example.COM>")
    (docs / "budget.eml").write_bytes(bytes(note))
    assert _ingest(docs).returncode == 0
    budget = [str(docs / "budget.eml")]
    for written in ("from=alice@example.com", "from=Alice@Example.com", "to=TEAM@example.com"):
        assert [h["path"] for h in _hits("kettle", "--filter", written)] == budget, written
    assert _hits("kettle", "--filter", "from!=ALICE@example.com") == []


def test_an_attachments_message_is_a_path_rag_get_takes(docs):
    import mailbox

    make_eml(docs / "budget.eml")
    box = mailbox.mbox(str(docs / "inbox.mbox"))
    for n in (1, 2):
        note = (f"n{n}.txt", f"Attached words {n}.".encode())
        box.add(mail("bob@example.com", f"Note {n}", "Tue, 10 Jan 2023 09:00:00 +0000", f"Body {n}.", note))
    box.flush()
    box.close()
    assert _ingest(docs, "--defer-embedding").returncode == 0
    messages = {"budget.eml#1/minutes.txt": "budget.eml", "inbox.mbox#1/n1.txt": "inbox.mbox"}
    messages["inbox.mbox#2/n2.txt"] = "inbox.mbox#2"
    for attachment, message in messages.items():
        shown = rag("get", str(docs / attachment), "--json")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["metadata"]["message"] == str(docs / message)
        got = rag("get", str(docs / message))
        assert got.returncode == 0 and "Subject:" in got.stdout, got.stderr


def test_reingest_keeps_every_message_and_attachment(every_format, every_format_index, isolated_home):
    ingested, index = every_format_index
    assert ingested.returncode == 0
    shutil.copytree(index, isolated_home)  # this test's index: the first ingest's, copied
    again = json.loads(_ingest(every_format).stdout)
    assert again["added"] == again["removed"] == 0
    assert _hits("sundial") and _hits("pelican")


def test_a_changed_mailbox_drops_gone_messages_and_rm_removes_them_all(docs):
    import mailbox

    (docs / "keep.txt").write_text("A note that stays.\n")
    box_path = docs / "box.mbox"
    box = mailbox.mbox(str(box_path))
    for n, word in enumerate(["albatross", "flamingo", "toucan"]):
        box.add(mail(f"m{n}@example.com", word, "Mon, 15 Apr 2024 10:00:00 +0000", f"About a {word}."))
    box.flush()
    assert _ingest(docs).returncode == 0 and _hits("toucan")
    box.remove(2)
    box.flush()
    box.close()
    report = json.loads(_ingest(docs).stdout)
    assert report["removed"] == 1 and not _hits("toucan") and _hits("flamingo")
    assert rag("rm", str(box_path), "--yes").returncode == 0
    assert not _hits("flamingo") and not _hits("albatross")


def test_html_only_mail_is_cleaned_like_html(docs):
    message = mail("erin@example.com", "Newsletter", "Mon, 15 Apr 2024 10:00:00 +0000", "")
    message.set_content(
        "<html><body><script>tracker()</script><p>The <b>kingfisher</b> returns.</p></body></html>",
        subtype="html",
    )
    (docs / "news.eml").write_bytes(bytes(message))
    assert _ingest(docs).returncode == 0
    text = _hits("kingfisher")[0]["text"]
    assert "The kingfisher returns." in text and "tracker" not in text and "<p>" not in text


def test_ignore_files_and_generated_folders_are_skipped(docs):
    (docs / "src").mkdir()
    (docs / "src" / "main.py").write_text("print('heron')\n")
    (docs / "node_modules" / "lib").mkdir(parents=True)
    (docs / "node_modules" / "lib" / "index.js").write_text("heron = 1\n")
    (docs / "venv").mkdir()
    (docs / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (docs / "venv" / "site.py").write_text("heron = 2\n")
    (docs / "package.json").write_text("{}\n")
    (docs / "dist").mkdir()
    (docs / "dist" / "bundle.js").write_text("heron = 3\n")
    (docs / "secret").mkdir()
    (docs / "secret" / "notes.md").write_text("heron notes\n")
    (docs / "draft.md").write_text("heron draft\n")
    (docs / ".gitignore").write_text("secret/\n")
    (docs / ".ragignore").write_text("draft.md\n")
    assert _ingest(docs).returncode == 0
    assert {h["path"] for h in _hits("heron")} == {str(docs / "src" / "main.py")}


def test_unsupported_files_are_counted_and_named_with_verbose(docs):
    (docs / "notes.txt").write_text("a note about herons\n")
    (docs / "drawing.xcf").write_bytes(b"gimp xcf v011\x00\x00")
    result = rag("-v", "ingest", str(docs), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["skipped"] == 1
    assert "drawing.xcf: unsupported type" in result.stderr


def test_help_lists_every_type():
    text = rag("ingest", "--help").stdout
    for kind in ("pptx", "xlsx", "ods", "csv", "epub", "odt", "rtf", "eml", "mbox", "png"):
        assert kind in text


def _zip_with(path: Path, name: str, data: bytes) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)


def test_bad_input_is_one_line_each_and_the_rest_ingested(docs):
    make_csv(docs / "good.csv")
    (docs / "protected.xlsx").write_bytes(bytes.fromhex("d0cf11e0a1b11ae1") + b"\x00" * 600)
    (docs / "corrupt.pptx").write_bytes(b"PK\x03\x04 this is not a zip")
    (docs / "legacy.ppt").write_bytes(bytes.fromhex("d0cf11e0a1b11ae1") + b"\x00" * 600)
    (docs / "broken.epub").write_bytes(b"not an epub")
    _zip_with(docs / "bomb.ods", "content.xml", b"<a>" + b" " * 150_000_000 + b"</a>")
    (docs / "junk.mbox").write_bytes(b"\x00garbage without any From line\n")
    big = mail("dan@example.com", "Big", "Mon, 15 Apr 2024 10:00:00 +0000", "A huge walrus attachment.")
    big.add_attachment(b"x" * 50_000_000, maintype="text", subtype="plain", filename="huge.txt")
    (docs / "big.eml").write_bytes(bytes(big))
    result = _ingest(docs)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    failed = {Path(f["path"]).name: f["reason"] for f in report["failed"]}
    assert set(failed) == {"protected.xlsx", "corrupt.pptx", "legacy.ppt", "broken.epub", "bomb.ods"}
    assert "password-protected" in failed["protected.xlsx"]
    assert "convert it to .pptx" in failed["legacy.ppt"]
    assert "zip_max_ratio" in failed["bomb.ods"] or "zip_max_bytes" in failed["bomb.ods"]
    assert all("\n" not in reason for reason in failed.values())
    assert _hits("capybara") and _hits("walrus")
    assert strict_exit(docs) == 1


def strict_exit(folder: Path) -> int:
    return rag("ingest", str(folder), "--strict", "--json").returncode


def test_million_empty_styled_rows_are_skipped(docs):
    import openpyxl

    book = openpyxl.Workbook(write_only=False)
    sheet = book.active
    sheet.append(["Animal", "Sound"])
    sheet.append(["Ibis", "croak"])
    book.save(docs / "styled.xlsx")
    _styled_rows(docs / "styled.xlsx", 1_000_000)
    result = _ingest(docs)
    assert result.returncode == 0 and json.loads(result.stdout)["failed"] == [], result.stderr
    assert "row 2: Animal: Ibis; Sound: croak" in _hits("ibis")[0]["text"]


def _styled_rows(path: Path, count: int) -> None:
    """Rewrite the sheet XML with `count` empty rows carrying a style, as a spreadsheet program saves them."""
    with zipfile.ZipFile(path) as source:
        parts = {name: source.read(name) for name in source.namelist()}
    name = "xl/worksheets/sheet1.xml"
    rows = b"".join(
        b'<row r="%d" s="1" customFormat="1"><c r="A%d" s="1"/></row>' % (n, n) for n in range(3, count)
    )
    parts[name] = parts[name].replace(b"</sheetData>", rows + b"</sheetData>")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for part, data in parts.items():
            target.writestr(part, data)


tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="Tesseract is not installed")


@tesseract
def test_scanned_image_is_read_by_ocr_and_cached(docs):
    pytest.importorskip("pytesseract", reason="the ocr extra (pytesseract) is not installed")
    make_scan_png(docs / "scan.png", "HARBOUR INVOICE 4417")
    assert _ingest(docs).returncode == 0
    hits = _hits("harbour")
    assert hits and hits[0]["path"] == str(docs / "scan.png") and hits[0]["page"] == 1
    assert "4417" in hits[0]["text"]
    assert list(Path(rag_cache()).glob("ocr/*/1.eng.txt"))


@tesseract
def test_scanned_pdf_page_is_read_by_ocr_and_resumes_at_the_page(docs):
    """A PDF with a text page and a scanned page: the scan is OCR'd, page kept, marked in metadata;
    a page whose OCR text is cached (an interrupted run) is taken from the cache, not redone."""
    pytest.importorskip("pypdfium2", reason="the ocr extra (pypdfium2) is not installed")
    from PIL import Image
    from pypdf import PdfReader, PdfWriter

    make_scan_png(docs / "scan.png", "CORMORANT LEDGER 2291")
    Image.open(docs / "scan.png").save(docs / "scan.bin", format="PDF")  # an image page, no text layer
    writer = PdfWriter()
    writer.append(PdfReader(FIXTURES / "sample" / "lighthouses.pdf"))  # four pages with text
    writer.append(PdfReader(docs / "scan.bin"))
    writer.write(docs / "mixed.pdf")
    for part in ("scan.bin", "scan.png"):
        (docs / part).unlink()

    assert _ingest(docs).returncode == 0
    hits = _hits("cormorant ledger")
    assert hits and hits[0]["path"] == str(docs / "mixed.pdf") and "2291" in hits[0]["text"]
    listed = json.loads(rag("ls", "--json").stdout)["documents"]
    cached = list(Path(rag_cache()).glob("ocr/*/5.eng.txt"))
    assert len(cached) == 1 and not list(Path(rag_cache()).glob("ocr/*/1.eng.txt"))  # pages 1-4 have text
    assert [d["path"] for d in listed] == [str(docs / "mixed.pdf")]

    cached[0].write_text("PELICAN MANIFEST from the cache")  # as left by an interrupted run
    assert rag("ingest", str(docs), "--rebuild").returncode == 0
    assert _hits("pelican manifest")[0]["path"] == str(docs / "mixed.pdf")


def rag_cache() -> str:
    import os

    return os.environ["RAG_CACHE_DIR"]


def test_scanned_image_without_ocr_is_skipped_with_one_line(docs, monkeypatch):
    make_scan_png(docs / "scan.png")
    make_xlsx(docs / "book.xlsx")
    make_eml(docs / "budget.eml")
    monkeypatch.setenv("RAG_TESSERACT", "no-such-tesseract")  # as on a machine without Tesseract
    result = rag("ingest", str(docs), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["failed"] == [] and report["skipped"] == 1
    lines = [line for line in result.stderr.splitlines() if "scan.png" in line]
    assert len(lines) == 1 and "ragcli[ocr]" in lines[0] and "tesseract" in lines[0]
