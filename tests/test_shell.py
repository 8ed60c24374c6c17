"""`rag` as a shell user meets it: pipes, a terminal, colour, signals and exit codes.

These drive the installed entry point (`python -m ragcli`, the same `main()` as `rag`)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from fakes import HashEmbedder
from runner import rag
from writes_held import query_int, writes_held
from ragcli.ingest.pipeline import ingest

RAG = [sys.executable, "-m", "ragcli"]
COLOUR = re.compile(r"\x1b\[(?:3[0-7]|9[0-7]|38;)")


def write_notes(folder: Path, count: int, lines: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        text = " ".join(
            f"Note {number} line {line} about bees, rivers and lighthouses." for line in range(lines)
        )
        (folder / f"note-{number:04d}.txt").write_text(text)
    return folder


def spawn(args: list[str], env: dict) -> pexpect.spawn:
    return pexpect.spawn(
        RAG[0], [*RAG[1:], *args], env=env, encoding="utf-8", timeout=300, dimensions=(40, 160)
    )


def test_exit_codes(tmp_path, isolated_home):
    assert rag("--version").returncode == 0
    assert rag("status").returncode == 1  # runtime error: no index
    assert rag("query", "--mode", "telepathy", "x").returncode == 2  # usage error
    assert rag("ingest", str(tmp_path / "missing")).returncode == 2


def test_json_in_a_pipe_is_pure(tmp_path, isolated_home):
    docs = write_notes(tmp_path / "docs", 3)
    result = rag("ingest", str(docs), "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["added"] == 3  # stdout is exactly one JSON document
    listing = rag("ls", "--json")
    assert len(json.loads(listing.stdout)["documents"]) == 3
    assert listing.stderr == ""


def test_closed_pipe_ends_quietly_with_exit_0(tmp_path, isolated_home):
    docs = write_notes(tmp_path / "docs", 1500, lines=1)
    ingest(isolated_home, [docs], embedder=HashEmbedder())
    result = subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" ls --color never | head -1', "_", *RAG],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and result.stderr == ""


def test_progress_bar_on_a_terminal_but_not_in_a_pipe(tmp_path, isolated_home):
    docs = write_notes(tmp_path / "docs", 60)
    child = spawn(["ingest", str(docs)], {**os.environ})
    child.expect(r"embedding.*/60 chunks")  # its own phase, with the total counted before it starts
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    write_notes(tmp_path / "docs", 70)
    piped = rag("ingest", str(docs))
    assert "embedding" not in piped.stderr and "chunks" not in piped.stderr.split("added")[0]
    assert "added" in piped.stderr


@pytest.mark.parametrize(
    ("extra_env", "args", "coloured"),
    [
        ({}, [], True),
        ({"NO_COLOR": "1"}, [], False),
        ({}, ["--color", "never"], False),
    ],
)
def test_colour_follows_the_terminal_no_color_and_flag(
    tmp_path, fixtures_dir, isolated_home, extra_env, args, coloured
):
    env = {**os.environ, **extra_env, "TERM": "xterm-256color"}
    child = spawn([*args, "ingest", str(fixtures_dir / "docs" / "broken")], env)
    output = child.read()
    child.close()
    assert "failed" in output
    assert bool(COLOUR.search(output)) is coloured


def test_colour_always_in_a_pipe(fixtures_dir, isolated_home):
    result = rag("--color", "always", "ingest", str(fixtures_dir / "docs" / "broken"))
    assert COLOUR.search(result.stderr)
    assert not COLOUR.search(rag("ingest", str(fixtures_dir / "docs" / "broken")).stderr)


def test_sigint_during_ingest_exits_130_and_leaves_a_usable_index(tmp_path, isolated_home):
    docs = write_notes(tmp_path / "docs", 5)
    assert rag("ingest", str(docs)).returncode == 0
    write_notes(tmp_path / "docs", 400, lines=4)
    process = subprocess.Popen(
        [*RAG, "ingest", str(docs), "--batch-size", "8"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def past_the_first_five(conn) -> bool:
        return query_int(conn, "SELECT count(*) FROM documents") > 5

    # Ctrl-C sent while the test holds the index's write lock: the run cannot have finished
    # (a poll alone could find it done on a fast machine); it sees the interrupt once it may
    # commit again, mid-run.
    with writes_held(isolated_home, process, past_the_first_five, "6 documents"):
        process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    status = rag("status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["documents"] > 5
    resumed = rag("ingest", str(docs), "--json", "--defer-embedding")  # the resume, not its vectors
    assert json.loads(resumed.stdout)["unchanged"] > 5
