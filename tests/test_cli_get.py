"""`rag get` and `rag open` through the installed `rag`, over an index of in-memory documents."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from runner import rag
from conftest import FIXTURES
from fakes import HashEmbedder
from ragcli.retrieval.documents import parse_target, stitch
from ragcli.ingest.pipeline import ingest_documents
from ragcli.cli.opener import open_command
from ragcli.types import ChunkSettings, Document

PDF_TEXT = (
    "The lighthouse lamp was lit every evening; its beam warned ships.\f"
    "The keeper wrote the log of passing ships by candle light.\f"
    "Storms broke the glass twice in one winter."
)
DOCS = [
    Document("/papers/lighthouse.pdf", PDF_TEXT, "pdf", {"author": "ann", "title": "Lights"}),
    Document("/notes/茶.md", "中国是茶的故乡，唐代的陆羽写成了《茶经》。 " * 30, "md", {}),
]


@pytest.fixture
def index(isolated_home):
    ingest_documents(
        isolated_home, DOCS, embedder=HashEmbedder(), group="medium", chunking=ChunkSettings("word", 12, 4)
    )
    return isolated_home


def test_get_prints_the_stored_document_rebuilt_from_overlapping_chunks(index):
    done = rag("get", "/notes/茶.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout == DOCS[1].text + "\n"  # word windows keep every character


def test_get_page_and_json(index):
    page = rag("get", "/papers/lighthouse.pdf:2")
    assert page.returncode == 0
    assert page.stdout == "The keeper wrote the log of passing ships by candle light.\n"
    document = json.loads(rag("get", "/papers/lighthouse.pdf", "--json").stdout)
    assert document["schema_version"] == 1 and document["kind"] == "document"
    assert document["text"] == PDF_TEXT and document["pages"] == 3 and document["page"] is None
    assert document["metadata"]["author"] == "ann" and document["metadata"]["file_type"] == "pdf"
    assert len(document["chunk_ids"]) > 1


def test_query_hits_carry_chunk_ids_that_get_reads(index):
    hits = json.loads(rag("query", "candle keeper", "--mode", "bm25", "--json").stdout)["hits"]
    top = hits[0]
    chunk = json.loads(rag("get", "--chunk", str(top["chunk_id"]), "--json").stdout)
    assert chunk["kind"] == "chunk" and chunk["text"] == top["text"] and chunk["page"] == top["page"]
    assert rag("get", "--chunk", str(top["chunk_id"])).stdout == top["text"] + "\n"
    line = json.loads(rag("query", "candle keeper", "--mode", "bm25", "--jsonl").stdout.splitlines()[0])
    assert line["chunk_id"] == top["chunk_id"]


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["/nowhere.md"], 1, "/nowhere.md is not in the index"),
        (["/papers/lighthouse.pdf:9"], 1, "has 3 page(s), not 9"),
        (["--chunk", "424242"], 1, "no chunk 424242"),
        ([], 2, "give PATH[:PAGE] or --chunk ID"),
    ],
)
def test_get_errors(index, args, code, message):
    done = rag("get", *args)
    assert done.returncode == code and message in done.stderr and done.stdout == ""


def test_get_an_indexed_empty_file_prints_nothing_and_succeeds(isolated_home, tmp_path):
    """`rag ls` lists an empty file; `rag get` prints no text for it, says so on stderr and
    exits 0. A group it was never chunked in is still an error."""
    docs = tmp_path / "e"
    docs.mkdir()
    (docs / "empty.txt").write_text("")
    assert rag("ingest", str(docs)).returncode == 0
    assert str(docs / "empty.txt") in rag("ls").stdout
    done = rag("get", str(docs / "empty.txt"))
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert "empty.txt is empty" in done.stderr
    assert json.loads(rag("get", str(docs / "empty.txt"), "--json").stdout)["text"] == ""
    missing = rag("get", str(docs / "empty.txt"), "--group", "nope")
    assert missing.returncode == 1 and "has no chunks in group 'nope'" in missing.stderr


def test_get_without_an_index(isolated_home):
    done = rag("get", "/a.md")
    assert done.returncode == 1 and done.stderr.startswith("rag: error: no index at")


def test_open_without_a_display_prints_the_path_and_page(index):
    env = {key: value for key, value in os.environ.items() if key not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = rag("open", "/papers/lighthouse.pdf:2", env=env)
    assert done.returncode == 0 and done.stdout == "/papers/lighthouse.pdf:2\n"


def test_open_starts_a_page_aware_viewer_when_there_is_one(index, tmp_path):
    # No desktop here: a stand-in `zathura` on PATH records how it was started.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "args.txt"
    viewer = bin_dir / "zathura"
    viewer.write_text(f'#!/bin/sh\necho "$@" > {record}\n')
    viewer.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    done = rag("open", "/papers/lighthouse.pdf:3", env={**os.environ, "DISPLAY": ":0", "PATH": path})
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert opened(record) == ["--page", "3", "/papers/lighthouse.pdf"]


def test_open_command_choices():
    found = {"xdg-open": "/usr/bin/xdg-open", "evince": "/usr/bin/evince", "open": "/usr/bin/open"}.get
    assert open_command("/a.pdf", 4, platform="linux", has_display=True, which=found) == [
        "evince",
        "--page-label",
        "4",
        "/a.pdf",
    ]
    assert open_command("/a.md", None, platform="linux", has_display=True, which=found) == [
        "xdg-open",
        "/a.md",
    ]
    assert open_command("/a.pdf", 4, platform="linux", has_display=False, which=found) is None
    assert open_command("/a.pdf", 4, platform="darwin", has_display=False, which=found) == ["open", "/a.pdf"]
    assert open_command("/a.pdf", 4, platform="linux", has_display=True, which=lambda name: None) is None


def test_stitch_and_parse_target(tmp_path):
    text = "alpha beta gamma delta epsilon"
    windows = [(0, 16, text[0:16]), (11, 22, text[11:22]), (17, 30, text[17:30])]
    assert stitch(windows) == text
    assert stitch([(0, 5, "alpha"), (11, 16, "gamma")]) == "alpha\ngamma"
    assert parse_target("/a/b.pdf:12") == ("/a/b.pdf", 12)
    odd = tmp_path / "odd:7"
    odd.write_text("x")
    assert parse_target(str(odd)) == (str(odd), None)
    assert parse_target("c:/notes") == ("c:/notes", None)


def fake_viewers(tmp_path, *names: str) -> tuple[dict, object]:
    """Stand-in viewers on PATH that record how they were started (one line per start)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "opened.txt"
    for name in names:
        viewer = bin_dir / name
        viewer.write_text(f'#!/bin/sh\necho "{name} $@" >> {record}\n')
        viewer.chmod(0o755)
    return {"DISPLAY": ":0", "PATH": f"{bin_dir}:{os.environ['PATH']}"}, record


def opened(record, timeout: float = 120) -> list[str]:
    """The words of the stand-in viewer's line, once it is written whole: the detached viewer
    runs in its own time, and its shell creates the file before echo writes the line."""
    deadline = time.monotonic() + timeout
    while not (record.exists() and record.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.1)
    return record.read_text().split()


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_query_open_opens_the_top_hit_at_its_page_and_leaves_stdout_alone(index, tmp_path, output):
    env, record = fake_viewers(tmp_path, "zathura", "xdg-open")
    plain = rag("query", "candle keeper", "--mode", "bm25", *output)
    done = rag("query", "candle keeper", "--mode", "bm25", *output, "--open", env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain.stdout  # the data as without --open
    top = json.loads(rag("query", "candle keeper", "--mode", "bm25", "--json").stdout)["hits"][0]
    assert opened(record) == ["zathura", "--page", str(top["page"]), "/papers/lighthouse.pdf"]
    assert "opened the top hit with zathura: /papers/lighthouse.pdf:" in done.stderr


def test_query_open_uses_xdg_open_for_an_unpaged_file(index, tmp_path):
    env, record = fake_viewers(tmp_path, "zathura", "xdg-open")
    done = rag("query", "茶经", "--mode", "bm25", "--open", env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    assert opened(record) == ["xdg-open", "/notes/茶.md"]


def test_open_without_a_display_names_the_hit_on_stderr_and_does_not_fail(index, tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("DISPLAY", "WAYLAND_DISPLAY")}
    plain = rag("query", "candle keeper", "--mode", "bm25")
    done = rag("query", "candle keeper", "--mode", "bm25", "--open", stdin="", env=env)
    assert done.returncode == 0 and done.stdout == plain.stdout
    assert "nothing can open files here" in done.stderr and "/papers/lighthouse.pdf:" in done.stderr


def test_query_open_with_no_hits_says_so(index, tmp_path):
    env, record = fake_viewers(tmp_path, "xdg-open")
    done = rag("query", "zebra", "--mode", "bm25", "--open", env={**os.environ, **env})
    assert done.returncode == 0 and "--open: no top hit to open" in done.stderr
    time.sleep(0.5)
    assert not record.exists()


def test_ask_open_opens_the_first_cited_source(isolated_home, tmp_path):
    # A real index (default embedding model): answers read the sources' embeddings.
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(FIXTURES / "docs" / "lighthouses.pdf", docs / "lighthouses.pdf")
    assert rag("ingest", str(docs)).returncode == 0
    env, record = fake_viewers(tmp_path, "zathura", "xdg-open")
    question = ["ask", "When was the Eddystone Lighthouse first lit?", "--json"]
    answer = json.loads(rag(*question).stdout)
    done = rag(*question, "--open", env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == answer["answer"]
    first = answer["citations"][0]
    assert opened(record) == ["zathura", "--page", str(first["page"]), first["path"]]
    assert "opened the first cited source with zathura" in done.stderr


@pytest.mark.parametrize("command", ["query", "ask"])
def test_open_with_many_queries_from_stdin_is_a_usage_error(index, command):
    done = rag(command, "-", "--open", stdin="a\nb\n")
    assert done.returncode == 2 and "--open" in done.stderr
