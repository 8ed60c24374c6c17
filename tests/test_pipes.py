"""Pipes and scripts: the INSTALLED `rag` executable with stdout/stderr sent to files and pipes.

Each test here failed on the main branch before issue 20: wrapped lines, box tables in pipes,
exit 1 on a closed pipe, contradictory flags accepted, raw escape sequences from file names,
`-v` that showed only library noise, bold under --color never, `rag rm` that did not last.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from fakes import HashEmbedder
from ragcli.ingest.pipeline import ingest

_BIN = Path(sys.executable).parent / "rag"
RAG = str(_BIN) if _BIN.exists() else shutil.which("rag")
SGR = re.compile(r"\x1b\[[0-9;]*m")
BOX = re.compile("[┏┃│╭─━┡]")
LONG_DIR = "d" * 150
EVIL = "evil\x1b[31mred\x1b]0;pwned\x07.txt"


class Result:
    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = code, stdout, stderr


def run(*args: str, tmp: Path, stdin: str | None = None, env: dict | None = None) -> Result:
    """Run `rag` with stdout and stderr redirected to files (not a terminal, not captured in-process)."""
    out, err = tmp / "out.txt", tmp / "err.txt"
    with open(out, "wb") as o, open(err, "wb") as e:
        code = subprocess.run(
            [RAG, *args],
            stdout=o,
            stderr=e,
            timeout=900,
            input=stdin.encode() if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            env=env,
        ).returncode
    return Result(code, out.read_text(errors="surrogateescape"), err.read_text(errors="surrogateescape"))


def closed_pipe(*args: str, tmp: Path) -> Result:
    """Run `rag` writing into a pipe whose reader is already gone (as after `| head -1`)."""
    err = tmp / "err.txt"
    with open(err, "wb") as e:
        process = subprocess.Popen([RAG, *args], stdout=subprocess.PIPE, stderr=e, stdin=subprocess.DEVNULL)
        process.stdout.close()
        code = process.wait(timeout=900)
    return Result(code, "", err.read_text())


def notes(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (folder / f"engine-{number:03d}.txt").write_text(
            f"Engine {number} manual: bees, rivers and lighthouses. Oil the gear box every week."
        )
    return folder


@pytest.fixture
def indexed(tmp_path, isolated_home) -> Path:
    """An index (fake embedder; bm25 queries) with 30 notes, a 200+ character path and an evil name."""
    docs = notes(tmp_path / "docs", 30)
    (docs / LONG_DIR).mkdir()
    (docs / LONG_DIR / ("f" * 90 + ".txt")).write_text("a deeply nested note about bees and gear boxes")
    (docs / EVIL).write_text("an evil name note about bees")
    ingest(isolated_home, [docs], embedder=HashEmbedder())
    return docs


def long_path(docs: Path) -> str:
    return str(docs / LONG_DIR / ("f" * 90 + ".txt"))


# -- nothing wraps ------------------------------------------------------------------------
def test_ingest_failures_and_summary_are_one_line_each_in_a_file(tmp_path, isolated_home):
    folder = tmp_path / "docs" / LONG_DIR
    folder.mkdir(parents=True)
    (folder / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (folder / "good.txt").write_text("a good note about bees")
    bad = str((folder / "latin1.txt").resolve())
    assert len(bad) > 200
    result = run("ingest", str(tmp_path / "docs"), tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    failure = [line for line in lines if line.startswith("failed ")]
    assert len(failure) == 1 and bad in failure[0] and "in.txt > out.txt" in failure[0]
    summary = [line for line in lines if "added" in line]
    assert len(summary) == 1 and re.search(r"1 added.*; \d+\.\d s$", summary[0])
    assert len(lines) == 2


def test_a_long_error_is_one_line(tmp_path, isolated_home):
    missing = tmp_path / ("x" * 220)
    result = run("status", "--index", str(missing), tmp=tmp_path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and str(missing) in result.stderr
    usage = run("ls", "--json", "--format", "tsv", tmp=tmp_path)
    assert usage.returncode == 2 and not BOX.search(usage.stderr)
    assert any("--json contradicts --format tsv" in line for line in usage.stderr.splitlines())


def test_help_has_no_broken_sentences_or_examples(tmp_path):
    ask = run("ask", "--help", tmp=tmp_path).stdout
    assert "followed by its sources (path and page) and each sentence's support" in ask
    example = 'rag ask "At what temperature is the bread baked?" --model qwen2.5-coder-0.5b'
    assert any(line.strip() == example for line in ask.splitlines())
    assert "'modified=>=2024-01-01'" in run("query", "--help", tmp=tmp_path).stdout
    for group in ("eval", "config"):
        assert "--install-completion" not in run(group, "--help", tmp=tmp_path).stdout


def test_one_spelling_per_concept_old_spellings_still_parse(tmp_path):
    answers = run("eval", "answers", "--help", tmp=tmp_path).stdout
    assert "--ctx" in answers and "--n-ctx" not in answers and "--cache / --no-cache" in answers
    ask = run("ask", "--help", tmp=tmp_path).stdout
    assert "--ctx" in ask and "--cache / --no-cache" in ask
    # The hidden alias is still an option: a bad value is reported against it, exit 2.
    alias = run("eval", "answers", "x.jsonl", "--n-ctx", "1", tmp=tmp_path)
    assert alias.returncode == 2 and "--n-ctx" in alias.stderr


# -- human lists in pipes ------------------------------------------------------------------
def test_ls_in_a_pipe_is_one_full_line_per_document(tmp_path, indexed):
    result = run("ls", tmp=tmp_path)
    assert result.returncode == 0 and not BOX.search(result.stdout)
    lines = result.stdout.splitlines()
    assert len(lines) == 32
    assert sum("engine-012.txt" in line for line in lines) == 1
    assert any(line.split("\t")[0] == long_path(indexed) for line in lines)


def test_status_and_config_show_in_a_pipe_are_key_value_lines(tmp_path, indexed):
    status = run("status", tmp=tmp_path).stdout
    assert "documents\t32" in status.splitlines() and not BOX.search(status)
    assert all(line.count("\t") == 1 for line in status.splitlines())
    config = run("config", "show", tmp=tmp_path).stdout
    assert not BOX.search(config)
    assert any(line.startswith("top_k\t10\tdefault\tRAG_TOP_K") for line in config.splitlines())


def test_query_table_in_a_pipe_is_one_line_per_hit(tmp_path, indexed):
    result = run("query", "gear box", "--mode", "bm25", "-k", "5", tmp=tmp_path)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and len(lines) == 5 and not BOX.search(result.stdout)
    assert [line.split("\t")[0] for line in lines] == ["1", "2", "3", "4", "5"]
    assert long_path(indexed) in result.stdout


LIST_COMMANDS = [
    ("ls",),
    ("status",),
    ("config", "show"),
    ("doctor",),
    ("query", "bees", "--mode", "bm25", "-k", "3"),
]


@pytest.mark.parametrize("command", LIST_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_list_command_has_tsv_csv_json_jsonl(tmp_path, indexed, command):
    tsv = run(*command, "--format", "tsv", tmp=tmp_path).stdout.splitlines()
    header = tsv[0].split("\t")
    assert len(tsv) > 1 and all(len(line.split("\t")) == len(header) for line in tsv)
    rows = list(csv.reader(io.StringIO(run(*command, "--format", "csv", tmp=tmp_path).stdout)))
    assert rows[0] == header and len(rows) == len(tsv)
    document = json.loads(run(*command, "--format", "json", tmp=tmp_path).stdout)
    assert document["schema_version"] == 1
    jsonl = run(*command, "--format", "jsonl", tmp=tmp_path).stdout.splitlines()
    assert len(jsonl) == len(tsv) - 1 and all(isinstance(json.loads(line), dict) for line in jsonl)


# -- a closed pipe ---------------------------------------------------------------------------
CLOSED_PIPE = [
    *[
        (*command, "--format", fmt)
        for command in LIST_COMMANDS
        for fmt in ("table", "tsv", "csv", "json", "jsonl")
    ],
    ("query", "bees", "--mode", "bm25", "--format", "paths"),
    ("ls",),
    ("status",),
    ("doctor",),
    ("query", "bees", "--mode", "bm25"),
    ("completions", "bash"),
    ("config", "path"),
    ("--help",),
    ("query", "--help"),
]


@pytest.mark.parametrize("command", CLOSED_PIPE, ids=" ".join)
def test_a_closed_pipe_exits_0_for_every_command_and_format(tmp_path, indexed, command):
    result = closed_pipe(*command, tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Broken pipe" not in result.stderr


def test_head_1_exits_0(tmp_path, indexed):
    for command in ("status", "ls", "query bees --mode bm25", "query bees --mode bm25 --format paths"):
        script = f"set -o pipefail; {RAG} {command} | head -1 >/dev/null"
        assert subprocess.run(["bash", "-c", script], timeout=300).returncode == 0, command


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("query", "bees", "--json", "--format", "paths"),
        ("query", "bees", "--json", "--jsonl"),
        ("query", ""),
        ("query", "   "),
        ("query", "bees", "--answer", "--format", "paths"),
        ("ls", "--json", "--format", "csv"),
        ("status", "--format", "paths"),
        ("doctor", "--json", "--format", "tsv"),
        ("completions",),
        ("completions", "tcsh"),
    ],
    ids=" ".join,
)
def test_bad_or_contradictory_input_exits_2(tmp_path, indexed, args):
    result = run(*args, tmp=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr  # one line


def test_stdin_queries_in_table_format_do_what_was_asked(tmp_path, indexed):
    result = run(
        "query", "--mode", "bm25", "-k", "2", "--format", "table", tmp=tmp_path, stdin="bees\ngear box\n"
    )
    lines = result.stdout.splitlines()
    # --format table was asked for: the human table (one per query), even in a pipe
    assert result.returncode == 0 and "\t" not in result.stdout
    assert [line for line in lines if line.startswith("query: ")] == ["query: bees", "query: gear box"]
    tsv = run("query", "--mode", "bm25", "-k", "2", "--format", "tsv", tmp=tmp_path, stdin="bees\n").stdout
    assert tsv.splitlines()[0].startswith("query\trank\tscore\tpath")


def test_a_line_too_long_on_stdin_is_skipped_and_the_others_are_answered(tmp_path, indexed):
    """One over-long line made the whole batch a usage error: the queries around it were lost."""
    lines = "bees\n" + "x " * 6000 + "\ngear box\n"
    queries = run("query", "--mode", "bm25", "-k", "1", "--format", "tsv", tmp=tmp_path, stdin=lines)
    assert queries.returncode == 2
    assert [row.split("\t")[0] for row in queries.stdout.splitlines()[1:]] == ["bees", "gear box"]
    assert "the query is 11,999 characters long" in queries.stderr
    assert "that line is skipped" in queries.stderr
    real = tmp_path / "real-model-index"  # answers rank sentences with the real embedding model
    assert run("ingest", str(indexed), "--index", str(real), tmp=tmp_path).returncode == 0
    answers = run("ask", "-", "--index", str(real), "--no-cache", tmp=tmp_path, stdin=lines)
    assert answers.returncode == 2 and "the question is 11,999 characters long" in answers.stderr
    assert [json.loads(row)["question"] for row in answers.stdout.splitlines()] == ["bees", "gear box"]


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_bytes_the_stream_encoding_cannot_hold_end_no_command(tmp_path, indexed, isolated_home, encoding):
    """Python reads and writes stdio strictly under most locales: a Latin-1 byte on stdin, or
    a character an ASCII terminal cannot show, ended `rag` with a traceback."""
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    done = subprocess.run(
        [RAG, "query", "-", "--mode", "bm25", "-k", "1", "--format", "tsv"],
        input="bees \xff\ngear b\u00f6x\n".encode("latin-1"),
        capture_output=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    rows = done.stdout.decode("ascii" if encoding == "ascii" else "utf-8").splitlines()[1:]
    assert [row.split("\t")[0] for row in rows] == ["bees \\xff", "gear b\\xf6x"]
    assert b"Traceback" not in done.stderr and b"UnicodeDecodeError" not in done.stderr
    (indexed / "caf\u00e9.txt").write_text("the caf\u00e9 keeps bees on the roof \u2026 and honey")
    ingest(isolated_home, [indexed], embedder=HashEmbedder())
    shown = subprocess.run(
        [RAG, "query", "roof honey", "--mode", "bm25", "-k", "1", "--jsonl"], capture_output=True, env=env
    )
    assert shown.returncode == 0, shown.stderr
    hit = json.loads(shown.stdout)  # valid JSON, whatever the encoding could hold
    assert hit["path"].endswith("caf\u00e9.txt") and "\u2026" in hit["text"]


def test_stdin_questions_and_queries_echo_an_undecodable_byte_alike(tmp_path, isolated_home):
    """`rag query -` echoed a stdin line's Latin-1 byte as that byte, `rag ask -` as U+FFFD: a
    script joining answers to its input lines could not match them."""
    docs = tmp_path / "bees"
    docs.mkdir()
    (docs / "hive.txt").write_text("Bees keep their honey in wax cells of the hive.")
    real = tmp_path / "real-model-index"  # answers rank sentences with the real embedding model
    assert run("ingest", str(docs), "--index", str(real), tmp=tmp_path).returncode == 0
    line = "where do bees keep honey \xff".encode("latin-1") + b"\n"
    echoed = []
    for command in (["query", "-", "--jsonl", "-k", "1"], ["ask", "-", "--no-cache"]):
        done = subprocess.run(
            [RAG, *command, "--index", str(real)], input=line, capture_output=True, timeout=900
        )
        assert done.returncode == 0, done.stderr
        record = json.loads(done.stdout.splitlines()[0])
        echoed.append(record.get("query", record.get("question")))
    assert echoed == ["where do bees keep honey \udcff"] * 2


# -- control characters in names -------------------------------------------------------------
def test_control_characters_in_names_are_escaped_in_human_output(tmp_path, indexed):
    evil = str(indexed / EVIL)
    escaped = evil.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    for args in (
        ("ls",),
        ("query", "evil name", "--mode", "bm25"),
        ("query", "evil name", "--mode", "bm25", "--format", "paths"),
        ("query", "evil name", "--mode", "bm25", "--format", "tsv"),
    ):
        out = run(*args, tmp=tmp_path).stdout
        assert "\x1b" not in out and "\x07" not in out, args
        assert escaped in out, args
    paths = [
        hit["path"]
        for hit in json.loads(run("query", "evil name", "--mode", "bm25", "--json", tmp=tmp_path).stdout)[
            "hits"
        ]
    ]
    assert evil in paths  # JSON carries the real name, escaped by JSON's rules


def test_a_name_as_a_pipe_shows_it_is_accepted_back_by_get_open_and_rm(tmp_path, indexed, isolated_home):
    """`rag ls` in a pipe shows a newline in a name as `\\n` and an undecodable byte as `\\\\xff`;
    `rag get`, `rag open` and `rag rm` said such a shown name was not indexed."""
    (indexed / "two\nlines.txt").write_text("a note about quokkas")
    with open(os.path.join(os.fsencode(indexed), b"caf\xe9.txt"), "w") as handle:
        handle.write("a note about coffee")
    ingest(isolated_home, [indexed], embedder=HashEmbedder())
    listed = [line.split("\t")[0] for line in run("ls", tmp=tmp_path).stdout.splitlines()]
    newline = next(path for path in listed if path.endswith("two\\nlines.txt"))
    # The index holds an undecodable byte as the text `\\xe9`; TSV doubles its backslash.
    byte = next(path for path in listed if path.endswith("caf\\\\xe9.txt"))
    assert run("get", newline, tmp=tmp_path).stdout == "a note about quokkas\n"
    assert run("get", byte, tmp=tmp_path).stdout == "a note about coffee\n"
    opened = run("open", newline, tmp=tmp_path, env={**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""})
    assert opened.returncode == 0 and opened.stdout == str(indexed / "two\nlines.txt") + "\n"
    assert run("get", str(indexed / "no\\nsuch.txt"), tmp=tmp_path).returncode == 1
    removed = run("rm", newline, byte, "--json", tmp=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["removed"] == 2
    left = run("ls", tmp=tmp_path).stdout
    assert "quokka" not in left and newline not in left and byte not in left


def test_control_characters_escaped_on_a_terminal(tmp_path, indexed):
    for args in (["--color", "never", "ls"], ["--color", "never", "query", "evil name", "--mode", "bm25"]):
        child = pexpect.spawn(
            RAG, args, env={**os.environ}, encoding="utf-8", timeout=300, dimensions=(40, 250)
        )
        output = child.read()
        child.close()
        assert "\x1b]0;" not in output and "\x07" not in output
        assert "evil\\x1b[31mred" in output.replace("\r\n", "")


# -- colour ----------------------------------------------------------------------------------
def test_color_never_means_no_escape_sequences_on_a_terminal(tmp_path, indexed):
    child = pexpect.spawn(
        RAG,
        ["--color", "never", "status"],
        env={**os.environ, "TERM": "xterm-256color"},
        encoding="utf-8",
        timeout=300,
        dimensions=(40, 160),
    )
    output = child.read()
    child.close()
    assert "documents" in output and not SGR.search(output)


def test_support_labels_are_words_not_only_colour():
    from rich.console import Console

    from ragcli.answer.result import Answer
    from ragcli.answer.support import SentenceSupport
    from ragcli.cli.ask import _print_support

    support = tuple(
        SentenceSupport(f"A sentence that is {label}.", label, score, 1)
        for label, score in (("supported", 0.9), ("partial", 0.5), ("unsupported", 0.1))
    )
    console = Console(file=io.StringIO(), color_system=None, width=120)
    _print_support(console, Answer("q", "x", False, (), support=support))
    text = console.file.getvalue()
    for label in ("supported", "partial", "unsupported"):
        assert re.search(rf"\[1\] \d\.\d\d {label}\s+A sentence that is {label}\.", text)


# -- -v --------------------------------------------------------------------------------------
def test_verbose_says_what_rag_did_and_keeps_library_noise_for_vv(tmp_path, isolated_home):
    docs = notes(tmp_path / "docs", 3)
    assert run("ingest", str(docs), tmp=tmp_path).returncode == 0
    one = run("-v", "query", "gear box", "--mode", "hybrid", tmp=tmp_path).stderr
    assert f"index {isolated_home}" in one and "mode hybrid" in one
    for stage in ("load embedding model", "embed query", "bm25 retrieve", "dense retrieve", "fuse"):
        assert re.search(rf"stage {stage}: \d+\.\d+ s", one), stage
    assert "faiss" not in one and "ModuleNotFoundError" not in one
    two = run("-vv", "query", "gear box", "--mode", "hybrid", tmp=tmp_path).stderr
    assert "ragcli.stages" in two and "faiss" in two
    assert run("query", "gear box", "--mode", "hybrid", tmp=tmp_path).stderr == ""


# -- rm --------------------------------------------------------------------------------------
def test_rm_lasts_and_removing_everything_asks(tmp_path, isolated_home):
    docs = notes(tmp_path / "docs", 3)
    assert run("ingest", str(docs), tmp=tmp_path).returncode == 0
    removed = str(docs / "engine-001.txt")
    assert run("rm", removed, tmp=tmp_path).returncode == 0
    assert run("ingest", tmp=tmp_path).returncode == 0  # bare: the remembered roots
    assert removed not in run("ls", tmp=tmp_path).stdout
    assert run("ingest", removed, tmp=tmp_path).returncode == 0  # naming it adds it back
    assert removed in run("ls", tmp=tmp_path).stdout
    refused = run("rm", "/", tmp=tmp_path)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert len(run("ls", tmp=tmp_path).stdout.splitlines()) == 3
    assert run("rm", "/", "--yes", tmp=tmp_path).returncode == 0
    assert run("ls", tmp=tmp_path).stdout == ""
    assert run("ingest", tmp=tmp_path).returncode == 2  # no roots left to re-add


def test_rm_everything_asks_on_a_terminal(tmp_path, indexed):
    child = pexpect.spawn(RAG, ["rm", str(indexed)], env={**os.environ}, encoding="utf-8", timeout=300)
    child.expect(r"remove all 32 documents")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert len(run("ls", tmp=tmp_path).stdout.splitlines()) == 32


# -- progress --------------------------------------------------------------------------------
def test_progress_counts_chunks_embedded_on_a_terminal(tmp_path, isolated_home):
    docs = notes(tmp_path / "docs", 40)
    child = pexpect.spawn(
        RAG,
        ["ingest", str(docs), "--batch-size", "8"],
        env={**os.environ},
        encoding="utf-8",
        timeout=600,
        dimensions=(40, 200),
    )
    output = child.read()
    child.close()
    assert child.exitstatus == 0
    assert re.search(r"embedding .* \d+/40 chunks .* eta (\d:\d\d:\d\d|-)", output)
    assert re.search(r"40 added.*; \d+\.\d s", output)


# -- completions -----------------------------------------------------------------------------
def complete(words: str, cword: int, env: dict | None = None) -> list[str]:
    env = {
        **os.environ,
        **(env or {}),
        "_RAG_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    return subprocess.run([RAG], env=env, capture_output=True, text=True, timeout=120).stdout.split()


def test_completion_honours_index_on_the_line_and_offers_config_keys(tmp_path, isolated_home):
    other = tmp_path / "other"
    docs = notes(tmp_path / "docs", 2)
    ingest(other, [docs], embedder=HashEmbedder(), group="fine")
    assert complete(f"rag rm --index {other} ", 4) == sorted(str(p) for p in docs.iterdir())
    assert complete(f"rag query --index {other} --group ", 5) == ["fine"]
    assert complete("rag config set ", 3)[:3] == ["index", "cache_dir", "embed_model"]
    assert complete("rag config set to", 3) == ["top_k"]
