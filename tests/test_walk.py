"""The folder walk of `rag ingest`: what it cannot read is reported, one line each, never a crash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runner import rag


@pytest.fixture
def locked(tmp_path):
    """A folder `docs` with ok.txt and a subfolder `locked` (in.txt) that cannot be entered."""
    docs = tmp_path / "docs"
    (docs / "locked").mkdir(parents=True)
    (docs / "ok.txt").write_text("gerbils dig tunnels", encoding="utf-8")
    (docs / "locked" / "in.txt").write_text("hamsters hoard seeds", encoding="utf-8")
    (docs / "locked").chmod(0)
    try:
        if os.access(docs / "locked", os.R_OK | os.X_OK):
            pytest.skip("this process reads a chmod-000 folder anyway (root with CAP_DAC_OVERRIDE)")
        yield docs
    finally:
        (docs / "locked").chmod(0o755)


def test_an_unreadable_folder_is_one_failure_and_the_rest_is_ingested(locked):
    result = rag("ingest", str(locked), "--json", "--defer-embedding")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["added"] == 1
    assert report["failed"] == [
        {
            "path": str(locked / "locked"),
            "reason": f"{locked / 'locked'}: cannot read folder (Permission denied); check its permissions",
        }
    ]
    assert result.stderr.count("failed ") == 1
    strict = rag("ingest", str(locked), "--strict", "--defer-embedding")
    assert strict.returncode == 1 and "cannot read folder" in strict.stderr


def test_documents_of_a_folder_that_became_unreadable_are_kept(locked):
    (locked / "locked").chmod(0o755)
    first = rag("ingest", str(locked), "--json", "--defer-embedding")
    assert json.loads(first.stdout)["added"] == 2, first.stderr
    (locked / "locked").chmod(0)
    again = rag("ingest", str(locked), "--json", "--defer-embedding")
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert json.loads(again.stdout)["removed"] == 0
    listed = rag("ls", "--json")
    assert str(locked / "locked" / "in.txt") in listed.stdout


@pytest.fixture
def odd_entries(tmp_path) -> Path:
    """A folder with one text file, a named pipe, a dangling symlink and a symlink loop."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("gerbils dig tunnels", encoding="utf-8")
    os.mkfifo(docs / "fifo.txt")
    (docs / "d.txt").symlink_to(tmp_path / "nonexistent")
    (docs / "a2").symlink_to("b")
    (docs / "b").symlink_to("a2")
    return docs


def test_pipes_and_broken_links_get_a_line_each(odd_entries):
    result = rag("-v", "ingest", str(odd_entries), "--json", "--defer-embedding", timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["added"] == 1 and report["skipped"] == 2
    reasons = {Path(failure["path"]).name: failure["reason"] for failure in report["failed"]}
    assert "not a regular file (a named pipe)" in reasons["fifo.txt"]
    assert "cannot read file (No such file or directory)" in reasons["d.txt"]
    for loop in ("a2", "b"):
        assert f"skipped {odd_entries / loop}: cannot read file (Too many levels" in result.stderr


def test_a_named_pipe_named_on_the_command_line_is_reported(odd_entries):
    result = rag("ingest", str(odd_entries / "fifo.txt"), "--defer-embedding", timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"failed {odd_entries / 'fifo.txt'}: not a regular file (a named pipe)" in result.stderr
    assert "1 failed" in result.stderr
