"""The folder walk of `rag ingest`: what it cannot read is reported, one line each, never a crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runner import rag


# Root reads a chmod-000 folder anyway; without these capabilities it cannot, as a user cannot.
AS_A_USER = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")


def as_a_user(folder: Path) -> tuple[str, ...] | None:
    """The wrapper under which `folder` cannot be entered: none needed, `AS_A_USER` for root,
    or None when this machine offers neither."""
    if not os.access(folder, os.R_OK | os.X_OK):
        return ()
    if shutil.which("setpriv") is None:
        return None
    probe = subprocess.run([*AS_A_USER, "test", "-r", str(folder / "in.txt")], capture_output=True)
    return AS_A_USER if probe.returncode == 1 else None


@pytest.fixture
def locked(tmp_path):
    """A folder `docs` with ok.txt and a subfolder `locked` (in.txt) that cannot be entered, and
    the wrapper to run `rag` under so that it cannot enter it either."""
    docs = tmp_path / "docs"
    (docs / "locked").mkdir(parents=True)
    (docs / "ok.txt").write_text("gerbils dig tunnels", encoding="utf-8")
    (docs / "locked" / "in.txt").write_text("hamsters hoard seeds", encoding="utf-8")
    (docs / "locked").chmod(0)
    try:
        wrapper = as_a_user(docs / "locked")
        if wrapper is None:
            pytest.skip("this process reads a chmod-000 folder and cannot drop that power (no setpriv)")
        yield docs, wrapper
    finally:
        (docs / "locked").chmod(0o755)


def test_an_unreadable_folder_is_one_failure_and_the_rest_is_ingested(locked):
    locked, wrapper = locked
    result = rag("ingest", str(locked), "--json", "--defer-embedding", wrapper=wrapper)
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
    strict = rag("ingest", str(locked), "--strict", "--defer-embedding", wrapper=wrapper)
    assert strict.returncode == 1 and "cannot read folder" in strict.stderr


def test_documents_of_a_folder_that_became_unreadable_are_kept(locked):
    locked, wrapper = locked
    (locked / "locked").chmod(0o755)
    first = rag("ingest", str(locked), "--json", "--defer-embedding")
    assert json.loads(first.stdout)["added"] == 2, first.stderr
    (locked / "locked").chmod(0)
    again = rag("ingest", str(locked), "--json", "--defer-embedding", wrapper=wrapper)
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
