"""Hostile zip containers through the real `rag`: a zip bomb, an entity bomb and external entities
in .docx (and the other zip formats) each fail with one line naming the file and the limit, the
normal file beside them is ingested, exit 0 (1 with --strict), memory stays bounded, and no text
of a local file named by an entity reaches the index."""

from __future__ import annotations

import json
import resource
import zipfile
from pathlib import Path

import docx
import pytest
from format_files import make_epub, make_pptx, make_xlsx
from runner import rag

BODY_OPEN = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
)
BODY_CLOSE = b"</w:body></w:document>"
PARAGRAPH = b"<w:p><w:r><w:t>The same paragraph again and again.</w:t></w:r></w:p>"
BOMB_BYTES = 300_000_000  # past the 200 MB default limit once inflated
PEAK_RSS_BOUND = 1_500_000_000  # the rag process with its embedding model, far below a bomb's gigabytes
SECRET = "zanzibarquartzsecret"


def _rewrite(path: Path, member: str, write) -> None:
    """Copy a zip container, writing `member` with `write(stream)` (streamed: no 300 MB in memory)."""
    with zipfile.ZipFile(path) as source:
        parts = {name: source.read(name) for name in source.namelist() if name != member}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in parts.items():
            target.writestr(name, data)
        with target.open(member, "w", force_zip64=True) as stream:
            write(stream)


def _docx(path: Path, text: str = "A harmless paragraph.") -> Path:
    document = docx.Document()
    document.add_paragraph(text)
    document.save(path)
    return path


def make_zip_bomb_docx(path: Path) -> None:
    _docx(path)

    def write(stream):
        stream.write(BODY_OPEN)
        block = PARAGRAPH * 10_000
        for _ in range(BOMB_BYTES // len(block) + 1):
            stream.write(block)
        stream.write(BODY_CLOSE)

    _rewrite(path, "word/document.xml", write)


def _with_doctype(doctype: bytes, text: bytes) -> bytes:
    return (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        + doctype
        + BODY_OPEN.split(b"\n", 1)[1]
        + b"<w:p><w:r><w:t>"
        + text
        + b"</w:t></w:r></w:p>"
        + BODY_CLOSE
    )


def make_entity_bomb_docx(path: Path) -> None:
    _docx(path)
    laughs = [b'<!ENTITY lol0 "lol">'] + [
        b'<!ENTITY lol%d "%s">' % (n, b"".join(b"&lol%d;" % (n - 1) for _ in range(10))) for n in range(1, 10)
    ]
    doctype = b"<!DOCTYPE w:document [" + b"".join(laughs) + b"]>\n"
    _rewrite(path, "word/document.xml", lambda s: s.write(_with_doctype(doctype, b"&lol9;")))


def make_external_entity_docx(path: Path, target: str) -> None:
    _docx(path)
    doctype = b'<!DOCTYPE w:document [<!ENTITY x SYSTEM "file://%s">]>\n' % target.encode()
    _rewrite(path, "word/document.xml", lambda s: s.write(_with_doctype(doctype, b"leak: &x;")))


def _inject_external_entity(path: Path, member: str, target: str) -> None:
    """Put a DOCTYPE naming a local file in front of a member's root element."""
    with zipfile.ZipFile(path) as source:
        original = source.read(member)
    head, sep, rest = original.partition(b"?>")
    doctype = b'<!DOCTYPE root [<!ENTITY x SYSTEM "file://%s">]>' % target.encode()
    _rewrite(path, member, lambda s: s.write(head + sep + doctype + rest if sep else doctype + original))


@pytest.fixture
def hostile_folder(tmp_path) -> tuple[Path, Path]:
    folder = tmp_path / "docs"
    folder.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    _docx(folder / "normal.docx", "The lighthouse keeper logged every passing ship.")
    make_zip_bomb_docx(folder / "bomb.docx")
    make_entity_bomb_docx(folder / "laughs.docx")
    make_external_entity_docx(folder / "hostname.docx", "/etc/hostname")
    make_external_entity_docx(folder / "secret.docx", str(secret))
    make_pptx(folder / "secret.pptx")
    _inject_external_entity(folder / "secret.pptx", "ppt/slides/slide1.xml", str(secret))
    make_xlsx(folder / "secret.xlsx")
    _inject_external_entity(folder / "secret.xlsx", "xl/worksheets/sheet1.xml", str(secret))
    make_epub(folder / "secret.epub")
    _inject_external_entity(folder / "secret.epub", "OEBPS/book.opf", str(secret))
    return folder, secret


HOSTILE = {
    "bomb.docx",
    "laughs.docx",
    "hostname.docx",
    "secret.docx",
    "secret.pptx",
    "secret.xlsx",
    "secret.epub",
}


def test_hostile_containers_fail_one_line_each_and_the_normal_file_is_ingested(hostile_folder):
    folder, _ = hostile_folder
    result = rag("ingest", str(folder), "--json")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    failed = {Path(f["path"]).name: f["reason"] for f in report["failed"]}
    assert set(failed) == HOSTILE
    assert report["added"] == 1  # normal.docx
    for name, reason in failed.items():
        assert "\n" not in reason and name in reason
    assert "zip_max_ratio" in failed["bomb.docx"] or "zip_max_bytes" in failed["bomb.docx"]
    assert "entities" in failed["laughs.docx"] and "entities" in failed["hostname.docx"]
    lines = [line for line in result.stderr.splitlines() if line.startswith("failed")]
    assert len(lines) == len(HOSTILE)
    assert "Traceback" not in result.stderr
    assert peak < PEAK_RSS_BOUND


def test_strict_exits_1_and_no_local_file_text_is_indexed(hostile_folder):
    folder, _ = hostile_folder
    assert rag("ingest", str(folder), "--strict").returncode == 1
    hits = json.loads(rag("query", "lighthouse keeper", "--mode", "bm25", "--json").stdout)["hits"]
    assert [Path(h["path"]).name for h in hits] == ["normal.docx"]
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").is_file() else ""
    for word in filter(None, [SECRET, hostname]):
        found = json.loads(rag("query", word, "--mode", "bm25", "--json").stdout)["hits"]
        assert all(word not in hit["text"] for hit in found)
    listed = rag("ls", "--json")
    assert {Path(d["path"]).name for d in json.loads(listed.stdout)["documents"]} == {"normal.docx"}
