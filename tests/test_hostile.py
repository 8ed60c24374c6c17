"""Hostile documents next to a normal one, through the real `rag ingest`: each costs one line
(or is read within bounds), the normal file is ingested, and the ingest's peak memory stays
under a bound over a normal ingest's (read from the child's rusage, never from timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from conftest import child_environ
from runner import rag

BOUND_KB = 500 * 1024  # peak RSS allowed over a normal ingest's
NORMAL = "The harbour lighthouse was built in 1887 and painted red and white."

# A child that runs `rag ARGS` and reports the exit code, stderr and that ingest's peak RSS.
_MEASURE = """
import json, resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "ragcli", *sys.argv[1:]], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": done.returncode, "stderr": done.stderr, "peak_kb": peak}))
"""


def measured(*args: str, env: dict[str, str] | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, timeout=900, env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def folder_with_normal_file(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(parents=True)
    (docs / "normal.txt").write_text(NORMAL, encoding="utf-8")
    return docs


@pytest.fixture(scope="module")
def baseline_kb(tmp_path_factory, model_cache_dir) -> int:
    """A normal ingest's peak memory, measured once for the module."""
    home = tmp_path_factory.mktemp("baseline")
    docs = folder_with_normal_file(home)
    env = child_environ(home, model_cache_dir)
    result = measured("ingest", str(docs), "--index", str(home / "baseline-index"), env=env)
    assert result["rc"] == 0, result["stderr"]
    return result["peak_kb"]


def check_ingest(tmp_path: Path, docs: Path, refused: set[str], baseline_kb: int, *options: str) -> None:
    """One `failed` line per refused file, the rest ingested, exit 0, memory under the bound."""
    index = tmp_path / "index"
    result = measured("ingest", str(docs), "--index", str(index), *options)
    stderr = result["stderr"]
    assert result["rc"] == 0, stderr
    assert "Traceback" not in stderr and "Exception" not in stderr
    failed = [line for line in stderr.splitlines() if line.startswith("failed")]
    assert len(failed) == len(refused), stderr
    for name in refused:
        assert sum(name in line for line in failed) == 1, stderr
    assert result["peak_kb"] - baseline_kb < BOUND_KB, (result["peak_kb"], baseline_kb)
    listed = rag("ls", "--index", str(index), "--json")
    paths = {Path(doc["path"]).name for doc in json.loads(listed.stdout)["documents"]}
    assert "normal.txt" in paths and not paths & refused
    if refused:
        strict = rag("ingest", str(docs), "--index", str(index), "--strict", *options)
        assert strict.returncode == 1 and "Traceback" not in strict.stderr


def test_deeply_nested_and_huge_html(tmp_path, baseline_kb):
    docs = folder_with_normal_file(tmp_path)
    depth = 300_000  # quadratic in the parser before: minutes of CPU
    (docs / "deep.html").write_text(
        f"<html><body><p>deep page</p>{'<div>' * depth}nested words{'</div>' * depth}</body></html>",
        encoding="utf-8",
    )
    (docs / "huge.html").write_text(  # past the element limit: one line, never parsed
        "<html><body>" + "<div>" * 1_200_000 + "x" + "</body></html>", encoding="utf-8"
    )
    check_ingest(tmp_path, docs, {"huge.html"}, baseline_kb)
    text = rag("get", str(docs / "deep.html"), "--index", str(tmp_path / "index")).stdout
    assert "deep page" in text and "nested words" in text


def test_a_text_file_of_one_huge_line(tmp_path, baseline_kb):
    docs = folder_with_normal_file(tmp_path)
    line = b"lorem ipsum dolor sit amet " * 40_000  # about 1 MB, written 70 times: 70 MB
    with open(docs / "one-line.txt", "wb") as handle:
        for _ in range(70):
            handle.write(line)
    check_ingest(tmp_path, docs, {"one-line.txt"}, baseline_kb)
    assert "limit" in rag("ingest", str(docs), "--index", str(tmp_path / "index")).stderr


def _write_pdf(path: Path, objects: list[bytes]) -> None:
    """A PDF written by hand (objects numbered from 1, catalog first), with its xref table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _page(parent: int, font: int, contents: int, extra: bytes = b"") -> bytes:
    return (
        b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >>%s >>"
        b" /Contents %d 0 R >>" % (parent, font, extra, contents)
    )


def _many_pages(path: Path, count: int) -> None:
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count),
    ]
    objects.append(_FONT)
    for i in range(count):
        objects += [_page(2, 3, 5 + 2 * i), _stream(b"BT /F1 12 Tf 72 720 Td (Report page %d) Tj ET" % i)]
    _write_pdf(path, objects)


def _nested_resources(path: Path, depth: int) -> None:
    deep = b" /Deep " + b"[" * depth + b"]" * depth
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>", _FONT]
    objects += [_page(2, 3, 5, deep), _stream(b"BT /F1 12 Tf 72 720 Td (nested) Tj ET")]
    _write_pdf(path, objects)


def _deep_page_tree(path: Path, depth: int) -> None:
    objects = [b"<< /Type /Catalog /Pages 3 0 R >>", _FONT]
    for level in range(depth):
        me = 3 + level
        parent = b" /Parent %d 0 R" % (me - 1) if level else b""
        objects.append(b"<< /Type /Pages /Kids [%d 0 R] /Count 1%s >>" % (me + 1, parent))
    page = 3 + depth
    objects += [_page(page - 1, 2, page + 1), _stream(b"BT /F1 12 Tf 72 720 Td (deep tree) Tj ET")]
    _write_pdf(path, objects)


def test_large_and_deeply_nested_pdfs(tmp_path, baseline_kb):
    docs = folder_with_normal_file(tmp_path)
    _many_pages(docs / "pages.pdf", 10_000)
    _nested_resources(docs / "nested.pdf", 100_000)
    _deep_page_tree(docs / "tree.pdf", 20_000)
    # The nested resources leave no text layer pypdf can read; with OCR installed the rendered
    # page is read instead, so the file is ingested rather than refused.
    from ragcli.ingest.readers.ocr import ocr_available

    refused = {"tree.pdf"} if ocr_available() else {"nested.pdf", "tree.pdf"}
    # Reading is what is hostile here; embedding the 10,000 pages' chunks is not (a third of
    # the time), so the vectors are left for later.
    check_ingest(tmp_path, docs, refused, baseline_kb, "--defer-embedding")
    shown = rag("get", f"{docs / 'pages.pdf'}:10000", "--index", str(tmp_path / "index"))
    assert "Report page 9999" in shown.stdout
    if "nested.pdf" not in refused:
        nested = rag("get", str(docs / "nested.pdf"), "--index", str(tmp_path / "index"))
        assert "nested" in nested.stdout, nested.stderr


def test_a_milvus_lite_ingest_prints_no_library_tracebacks(tmp_path):
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    docs = folder_with_normal_file(tmp_path)
    (docs / "second.md").write_text("# Tides\n\nSpring tides follow the full moon.", encoding="utf-8")
    index, store = tmp_path / "index", str(tmp_path / "milvus.db")
    result = rag("ingest", str(docs), "--index", str(index), "--store", store)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Method not implemented" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("2 added")


_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName='
    '"/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.'
    'document.main+xml"/></Types>'
)
_RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
    '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)


def test_a_reader_failing_in_an_unforeseen_way_costs_one_line(tmp_path, baseline_kb):
    """The per-file boundary: a .docx whose main part is not a Word document makes its parser
    fail with an error no reader expects (an AttributeError); that file alone is reported."""
    import zipfile

    docs = folder_with_normal_file(tmp_path)
    main = (
        '<?xml version="1.0"?><w:foo xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>'
    )
    with zipfile.ZipFile(docs / "odd.docx", "w") as package:
        package.writestr("[Content_Types].xml", _CONTENT_TYPES)
        package.writestr("_rels/.rels", _RELS)
        package.writestr("word/document.xml", main)
    check_ingest(tmp_path, docs, {"odd.docx"}, baseline_kb)
