"""Trust: remembered settings stay remembered, and nothing is silently wrong.

Every test drives the real `rag` in a subprocess (`runner.rag`), as a user or a script would.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from runner import rag


def ingested_paths() -> list[str]:
    listed = rag("ls", "--json")
    assert listed.returncode == 0, listed.stderr
    return sorted(Path(doc["path"]).name for doc in json.loads(listed.stdout)["documents"])


@pytest.fixture
def docs_tree(tmp_path) -> Path:
    """A folder like a generated documentation tree: sources copied one level down, an index page."""
    root = tmp_path / "site"
    (root / "guide" / "_sources").mkdir(parents=True)
    (root / "api").mkdir()
    (root / "guide" / "install.md").write_text("Install the tool with pip, then run the setup command.\n")
    (root / "guide" / "_sources" / "install.md.txt").write_text("Install the tool with pip (source copy).\n")
    (root / "api" / "genindex.html").write_text(
        "<html><body><p>General index of every name.</p></body></html>"
    )
    (root / "api" / "calls.md").write_text("Every call takes a timeout in seconds.\n")
    return root


# -- remembered means remembered ----------------------------------------------------------


def test_a_bare_ingest_reads_each_root_with_its_remembered_filters(docs_tree):
    first = rag("ingest", str(docs_tree), "--exclude", "_sources", "--exclude", "genindex*")
    assert first.returncode == 0, first.stderr
    assert ingested_paths() == ["calls.md", "install.md"]
    (docs_tree / "guide" / "_sources" / "new.md.txt").write_text("Another source copy.\n")

    bare = rag("ingest")

    assert bare.returncode == 0, bare.stderr
    assert ingested_paths() == ["calls.md", "install.md"]  # the excluded files stay out
    assert "reading the roots ingested before" in bare.stderr
    assert f"{docs_tree} (group medium, exclude '_sources', exclude 'genindex*')" in bare.stderr
    status = json.loads(rag("status", "--json").stdout)
    remembered = {"group": "medium", "include": [], "exclude": ["_sources", "genindex*"]}
    assert status["root_options"] == {str(docs_tree): {**remembered, "groups": [remembered]}}
    human = rag("status", "--format", "table").stdout
    assert f"root       {docs_tree}  (group medium, exclude '_sources', exclude 'genindex*')" in human


def test_a_bare_ingest_skips_a_root_that_is_gone_and_keeps_its_documents(docs_tree, tmp_path):
    """A remembered root that no longer exists (deleted, or on a disk not mounted) stopped every
    bare ingest with a usage error (exit 2), so the other roots were never refreshed."""
    single = tmp_path / "note.md"
    single.write_text("The harbour pilot boards ships at dawn.\n")
    assert rag("ingest", str(docs_tree), str(single)).returncode == 0
    single.unlink()
    (docs_tree / "api" / "puffins.md").write_text("Puffins nest in burrows on the cliffs.\n")

    bare = rag("ingest")

    assert bare.returncode == 0, bare.stderr
    assert f"{single} no longer exists: skipped, its documents kept (`rag rm {single}`" in bare.stderr
    assert "puffins.md" in ingested_paths() and "note.md" in ingested_paths()
    shutil.rmtree(docs_tree)
    nothing = rag("ingest")
    assert nothing.returncode == 1 and "none of the roots ingested before exists" in nothing.stderr
    assert "note.md" in ingested_paths()  # nothing lost
    assert rag("rm", str(single)).returncode == 0
    assert "note.md" not in ingested_paths()


def test_a_root_named_again_keeps_its_group_and_filters_unless_flags_replace_them(docs_tree):
    assert rag("ingest", str(docs_tree), "--exclude", "_sources", "--group", "fine").returncode == 0

    again = rag("ingest", str(docs_tree))
    assert again.returncode == 0, again.stderr
    assert "in group 'fine'" in again.stderr and ingested_paths() == [
        "calls.md",
        "genindex.html",
        "install.md",
    ]

    changed = rag("ingest", str(docs_tree), "--exclude", "genindex*")
    assert changed.returncode == 0, changed.stderr
    assert f"{docs_tree}: exclude was '_sources', now 'genindex*'" in changed.stderr
    assert "install.md.txt" in ingested_paths()

    forgotten = rag("ingest", str(docs_tree), "--no-filters")
    assert "exclude was 'genindex*', now none" in forgotten.stderr
    assert "genindex.html" in ingested_paths()


def bm25_hits(query: str, group: str) -> list[str]:
    found = rag("query", query, "--mode", "bm25", "--group", group, "--json")
    assert found.returncode == 0, found.stderr
    return sorted({Path(hit["path"]).name for hit in json.loads(found.stdout)["hits"]})


def test_every_group_a_root_was_read_into_is_refreshed(tmp_path):
    """A root remembered only the last group it was read into: after a `--group fine` ingest,
    a bare ingest and `rag ingest ROOT` refreshed fine alone, and the default group that
    query, ask and get read kept stale text and never saw new files."""
    root = tmp_path / "s"
    shutil.copytree(FIXTURES / "sample", root)
    assert rag("ingest", str(root)).returncode == 0
    assert rag("ingest", str(root), "--include", "*.md", "--group", "fine").returncode == 0
    (root / "new.txt").write_text("The quokka is a small marsupial.\n")
    with (root / "bread_baking.md").open("a") as bread:
        bread.write("Extra line about gannets.\n")

    bare = rag("ingest", "--json")

    assert bare.returncode == 0, bare.stderr
    assert f"  {root} (group medium)\n  {root} (group fine, include '*.md')" in bare.stderr
    report, groups = json.loads(bare.stdout), json.loads(rag("status", "--json").stdout)["groups"]
    assert report["group"] == "medium, fine"  # vectors were the last group's alone
    assert report["vectors"] == groups["medium"]["vectors"] + groups["fine"]["vectors"]
    again = rag("ingest")  # nothing changed: the human summary
    assert f"{report['vectors']} vectors in groups 'medium', 'fine';" in again.stderr
    assert bm25_hits("quokka", "medium") == ["new.txt"] and bm25_hits("quokka", "fine") == []
    assert bm25_hits("gannets", "medium") == bm25_hits("gannets", "fine") == ["bread_baking.md"]

    (root / "second.txt").write_text("A puffin nests on the cliff.\n")
    (root / "cake.md").write_text("A sponge cake for the ospreys.\n")
    named = rag("ingest", str(root))
    assert named.returncode == 0, named.stderr
    assert bm25_hits("puffin", "medium") == ["second.txt"] and bm25_hits("puffin", "fine") == []
    assert bm25_hits("ospreys", "medium") == bm25_hits("ospreys", "fine") == ["cake.md"]

    (root / "tart.md").write_text("A lemon tart for the cormorants.\n")
    fine_only = rag("ingest", str(root), "--group", "fine")
    assert fine_only.returncode == 0, fine_only.stderr
    assert bm25_hits("cormorants", "fine") == ["tart.md"] and bm25_hits("cormorants", "medium") == []
    status = json.loads(rag("status", "--json").stdout)["root_options"][str(root)]
    assert status["groups"] == [
        {"group": "medium", "include": [], "exclude": []},
        {"group": "fine", "include": ["*.md"], "exclude": []},
    ]
    assert (status["group"], status["include"]) == ("fine", ["*.md"])  # the last, as before
    human = rag("status", "--format", "table").stdout
    assert f"root       {root}  (group medium; group fine, include '*.md')" in human


def test_patterns_given_with_a_group_change_that_group_only(tmp_path):
    root = tmp_path / "s"
    shutil.copytree(FIXTURES / "sample", root)
    assert rag("ingest", str(root), "--exclude", "*.pdf").returncode == 0
    assert rag("ingest", str(root), "--include", "*.md", "--group", "fine").returncode == 0

    changed = rag("ingest", str(root), "--group", "fine", "--no-filters")

    assert changed.returncode == 0, changed.stderr
    assert f"{root} (group fine): include was '*.md', now none" in changed.stderr
    groups = json.loads(rag("status", "--json").stdout)["root_options"][str(root)]["groups"]
    assert groups == [
        {"group": "medium", "include": [], "exclude": ["*.pdf"]},
        {"group": "fine", "include": [], "exclude": []},
    ]
    sized = rag("ingest", str(root), "--chunk-size", "100")
    assert sized.returncode == 2 and "name the group with --group" in sized.stderr


def test_patterns_are_gitignore_style_and_one_matching_nothing_is_named(docs_tree):
    done = rag("ingest", str(docs_tree), "--exclude", "_sources/*", "--exclude", "**/_sources/*")
    assert done.returncode == 0, done.stderr
    # anchored at the folder given, as in a .gitignore: there is no site/_sources
    assert "warning: pattern '_sources/*' matches no file" in done.stderr
    assert "'**/_sources/*' matches no file" not in done.stderr
    assert "install.md.txt" not in ingested_paths()


def test_a_file_root_inside_a_folder_root_is_counted_once(docs_tree):
    first = rag("ingest", str(docs_tree), str(docs_tree / "api" / "calls.md"), "--json")
    assert json.loads(first.stdout)["added"] == 4
    second = rag("ingest", "--json")
    report = json.loads(second.stdout)
    assert (report["added"], report["unchanged"]) == (0, 4)


def test_the_ingest_summary_reports_skipped_files(docs_tree):
    (docs_tree / "data.txt").write_bytes(b"\x00\x01binary\x00" * 50)
    done = rag("ingest", str(docs_tree))
    assert done.returncode == 0, done.stderr
    assert ", 1 skipped, " in done.stderr


# -- rag eval ------------------------------------------------------------------------------


def test_qrels_without_a_header_keep_their_first_judgment(tmp_path):
    beir = tmp_path / "beir"
    shutil.copytree(FIXTURES / "beir-mini", beir)
    qrels = beir / "qrels" / "test.tsv"
    with_header = rag("eval", "retrieval", str(beir), "--modes", "bm25", "--json")
    qrels.write_text("".join(qrels.read_text().splitlines(keepends=True)[1:]))  # no header line

    without = rag("eval", "retrieval", str(beir), "--modes", "bm25", "--json")

    assert without.returncode == 0, without.stderr
    assert json.loads(without.stdout)["queries"] == json.loads(with_header.stdout)["queries"] == 15


def test_eval_answers_on_an_index_without_the_relevant_documents_warns(tmp_path, sample_index):
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(
        json.dumps({"question": "Who keeps a lighthouse?", "answers": ["keeper"], "relevant": ["d01"]})
    )
    right = tmp_path / "right.jsonl"
    right.write_text(
        json.dumps(
            {"question": "Who keeps a lighthouse?", "answers": ["keeper"], "relevant": ["lighthouses.pdf"]}
        )
    )

    warned = rag("eval", "answers", str(wrong), "--modes", "bm25", "--json")
    quiet = rag("eval", "answers", str(right), "--modes", "bm25", "--json")

    assert warned.returncode == 0, warned.stderr
    report = json.loads(warned.stdout)
    assert (report["relevant_indexed"], report["relevant_listed"]) == (0, 1)
    assert (
        "only 0 of the 1 documents the questions list as relevant are in the index" in report["warnings"][0]
    )
    assert "rag: warning: only 0 of the 1 documents" in warned.stderr
    assert json.loads(quiet.stdout)["warnings"] == [] and "warning" not in quiet.stderr

    retrieval = rag("eval", "retrieval", str(wrong), "--modes", "bm25", "--json")
    assert retrieval.returncode == 0, retrieval.stderr
    assert json.loads(retrieval.stdout)["relevant_indexed"] == 0
    assert "rag: warning: only 0 of the 1 documents" in retrieval.stderr


# -- no silent wrong results: retrieval and answers ------------------------------------------


@pytest.fixture
def sample_index(corpus_index, isolated_home):
    """fixtures/sample's index, copied to this test's index home."""
    corpus_index("sample").copy(isolated_home)


@pytest.mark.model
def test_llm_mode_with_a_small_model_returns_k_hits_and_says_it_could_not_select(sample_index):
    # Six candidates are enough to ask for three (a shorter prompt for the model to read).
    done = rag(
        "query", "How do lighthouse keepers work?", "--mode", "llm", "-k", "3", "--candidates", "6", "--json"
    )
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["hits"]
    assert len(hits) == 3 and len({hit["chunk_id"] for hit in hits}) == 3
    chosen = [hit for hit in hits if "llm" in hit["sources"]]
    if len(chosen) < 3:  # the bundled 135M model names fewer passages than asked for
        assert f"the model selected {len(chosen)} of the 3 passages asked for" in done.stderr


def test_ask_with_an_empty_question_is_a_usage_error_like_query(sample_index):
    asked = rag("ask", "")
    assert asked.returncode == 2 and "the question is empty" in asked.stderr
    assert rag("query", "").returncode == 2


@pytest.mark.model
def test_llama_cpp_internals_show_at_vv_not_at_v(sample_index):
    question = ("ask", "What is green tea?", "--answer-style", "generative", "--no-cache")
    one = rag("-v", *question)
    two = rag("-vv", *question)
    assert one.returncode == 0 and two.returncode == 0, one.stderr
    assert "ragcli.llama" in two.stderr
    assert "llama_context" not in one.stderr and "llama_context" in two.stderr


def test_a_gguf_that_cannot_load_is_one_line_without_a_traceback(sample_index, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    done = rag("ask", "What is green tea?", "--model", str(broken), "--answer-style", "generative")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"rag: error: llama.cpp cannot load {broken} (Failed to load model from file: {broken}): "
        "is it a complete GGUF file?"
    ]


def test_mcp_on_a_missing_index_says_so_at_start_up(tmp_path):
    missing = tmp_path / "no-index-here"
    done = subprocess.run(
        [sys.executable, "-m", "ragcli", "mcp", "--index", str(missing)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout == ""
    assert f"rag mcp: warning: no index at {missing} yet" in done.stderr


# -- settings and output -------------------------------------------------------------------


def test_config_set_bad_number_is_one_line_in_words():
    done = rag("config", "set", "top_k", "abc")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "rag: error: rag config set top_k: bad value 'abc' for top_k: must be a whole number, 1 or more"
    )


def test_config_unset_removes_a_setting_and_show_tells_what_ask_uses():
    assert rag("config", "set", "top_k", "3").returncode == 0
    assert "top_k\t3\tconfig:" in rag("config", "show").stdout

    removed = rag("config", "unset", "top_k")
    again = rag("config", "unset", "top_k")

    assert removed.returncode == 0 and "top_k removed from" in removed.stderr
    assert again.returncode == 0 and "top_k was not set" in again.stderr
    assert "top_k\t10\tdefault" in rag("config", "show").stdout
    assert "10 (rag ask: 5)" in rag("config", "show", "--format", "table").stdout
    assert rag("config", "unset", "nope").returncode == 2


def test_format_table_off_a_terminal_prints_the_table_asked_for(sample_index):
    asked = rag("query", "lighthouse", "--mode", "bm25", "-k", "2", "--format", "table")
    piped = rag("query", "lighthouse", "--mode", "bm25", "-k", "2")
    assert asked.returncode == 0 and "\t" not in asked.stdout and "lighthouses.pdf" in asked.stdout
    assert "\t" in piped.stdout  # the default in a pipe stays one tab-separated line per hit
    assert "\t" not in rag("ls", "--format", "table").stdout


def test_a_bare_watch_keeps_the_remembered_filters(docs_tree, tmp_path):
    assert rag("ingest", str(docs_tree), "--exclude", "skip*").returncode == 0
    log = tmp_path / "watch.err"
    with log.open("w") as err:
        process = subprocess.Popen([sys.executable, "-m", "ragcli", "ingest", "--watch"], stderr=err)
    try:
        until(lambda: "watching" in log.read_text() or process.poll() is not None)
        assert process.poll() is None, log.read_text()
        (docs_tree / "skip-me.md").write_text("A draft the filters leave out.\n")
        (docs_tree / "keep-me.md").write_text("A note the watcher indexes.\n")
        until(lambda: "keep-me.md" in ingested_paths())
        assert "skip-me.md" not in ingested_paths()
        assert "exclude 'skip*'" in log.read_text()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)


def until(check, deadline: float = 180.0) -> None:
    """Poll until `check()` holds (a generous deadline: the machine may be busy)."""
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.5)
