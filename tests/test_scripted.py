"""What a script reading `rag`'s output sees: TSV fields that read back, arguments that are
refused rather than silently matching nothing, queries from stdin as a Windows editor saves them.

Each runs `python -m ragcli` in a subprocess (`runner.rag`), as a script runs `rag`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from fakes import HashEmbedder
from runner import rag
from ragcli.ingest.pipeline import ingest

# A literal backslash before n and t, a real tab and newline, quotes, non-ASCII.
TRICKY = 'Path C:\\new\\table and a tab\there.\nSecond line, "quoted", café 中文 about bees.'
BACKSLASH_NAME = "back\\slash.txt"


@pytest.fixture
def tricky(tmp_path, isolated_home) -> Path:
    """An index (fake embedder; bm25 queries) of one tricky text under a name with a backslash."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / BACKSLASH_NAME).write_text(TRICKY)
    ingest(isolated_home, [docs], embedder=HashEmbedder())
    return docs


def read_tsv_field(field: str) -> str:
    """A field as a reader of linear TSV decodes it: \\\\ \\t \\n \\r and \\xNN / \\uNNNN."""
    named = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}

    def one(match: re.Match) -> str:
        letter, code = match.group(1), match.group(2) or match.group(3)
        return named[letter] if letter else chr(int(code, 16))

    return re.sub(r"\\(?:([\\tnr])|x([0-9a-f]{2})|u([0-9a-f]{4}))", one, field)


def test_tsv_fields_read_back_exactly_with_backslashes_escaped(tricky):
    """A literal backslash before n read back as a newline: TSV did not escape backslashes."""
    stored = json.loads(rag("query", "bees", "--mode", "bm25", "--json").stdout)["hits"][0]["text"]
    assert "C:\\new\\table" in stored and "\t" in stored and "\n" in stored
    for args in (("--format", "tsv"), ()):  # --format tsv, and the plain lines of a pipe
        result = rag("query", "bees", "--mode", "bm25", *args)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        row = (lines[1] if args else lines[0]).split("\t")
        assert read_tsv_field(row[2]) == str(tricky / BACKSLASH_NAME)
        if args:
            assert read_tsv_field(row[-1]) == stored
            assert "C:\\\\new\\\\table" in row[-1]
    listed = rag("ls", "--format", "tsv").stdout.splitlines()[1].split("\t")[0]
    assert read_tsv_field(listed) == str(tricky / BACKSLASH_NAME)
    got = rag("get", listed)  # a name as the TSV line shows it is accepted back
    assert got.returncode == 0 and got.stdout == stored + "\n", got.stderr


@pytest.mark.parametrize(
    ("pair", "said"),
    [
        ("file_type=", "no value after '='"),
        ("file_type!=", "no value after '!='"),
        ("title<", "no value after '<'"),
        ("modified>=", "no value after '>='"),
        ("file_type==txt", "write --filter 'file_type=txt'"),
        (
            "modified=yesterday",
            "'yesterday' is not a date; write an ISO date such as --filter 'modified>=2024-01-01'",
        ),
        ("nokey", "write key=value, e.g. --filter file_type=pdf"),
    ],
)
def test_a_filter_without_a_value_is_a_usage_error_naming_it(tricky, pair, said):
    """`file_type=` matched nothing and `file_type!=` everything, both with exit 0."""
    result = rag("query", "bees", "--mode", "bm25", "--filter", pair)
    assert result.returncode == 2 and result.stdout == ""
    assert f"--filter '{pair}'" in result.stderr and said in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [("query", "bees", "--mode", "bm25"), ("get", BACKSLASH_NAME)])
def test_an_empty_group_is_a_usage_error_not_the_default(tricky, command):
    """`--group ''` (an unset shell variable) searched the default group without a word."""
    result = rag(*command, "--group", "")
    assert result.returncode == 2 and result.stdout == ""
    assert "--group" in result.stderr and "give a group's name" in result.stderr
    set_empty = rag("config", "set", "group", " ")
    assert set_empty.returncode == 2 and "give a group's name" in set_empty.stderr


def test_queries_from_stdin_lose_a_byte_order_mark_and_crlf(tricky):
    """A file saved by a Windows editor starts with a BOM, which stayed in the first query."""
    result = rag(
        "query", "-", "--mode", "bm25", "--format", "jsonl", stdin="\ufeffbees\r\n\r\n\ufeff\r\nbees\r\n"
    )
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["query"] for line in result.stdout.splitlines()] == ["bees", "bees"]


def test_config_get_prints_the_value_that_applies_for_scripts(tmp_path, isolated_home):
    """`rag config get KEY` did not exist: a script had to parse `rag config show`."""
    env = {**os.environ, "RAG_CONFIG": str(tmp_path / "rag.toml")}
    assert rag("config", "get", "top_k", env=env).stdout == "10\n"  # the default
    assert rag("config", "set", "top_k", "7", env=env).returncode == 0
    assert rag("config", "get", "top_k", env=env).stdout == "7\n"
    shown = json.loads(rag("config", "get", "top_k", "--json", env={**env, "RAG_TOP_K": "3"}).stdout)
    assert (shown["value"], shown["source"]) == ("3", "env:RAG_TOP_K")
    assert rag("config", "unset", "top_k", env=env).returncode == 0
    assert rag("config", "get", "top_k", env=env).stdout == "10\n"
    none = rag("config", "get", "embed_model", env=env)  # no value: decided by the index
    assert none.returncode == 0 and none.stdout == ""
    unknown = rag("config", "get", "nosuch", env=env)
    assert unknown.returncode == 2 and "unknown setting 'nosuch'" in unknown.stderr


def test_status_help_names_keys_that_status_prints(tricky):
    """`rag status --help` gave `group.medium.chunks` as a key; the key is `groups.medium.chunks`."""
    help_text = " ".join(rag("status", "--help").stdout.split())
    named = re.findall(r"`([a-z_.]+) \d+`", help_text)
    keys = {line.split("\t")[0] for line in rag("status").stdout.splitlines()}
    assert named and set(named) <= keys, (named, sorted(keys))


def test_config_set_and_unset_repair_a_bad_value_in_the_file(tmp_path, isolated_home):
    """A bad value in the config file (say `group = ""`, which older versions wrote) made every
    command fail, `rag config set` and `unset` too, so the fix the error asked for was refused."""
    config = tmp_path / "rag.toml"
    config.write_text('mode = "telepathy"\ntop_k = 4\ngroup = ""\nold_key = 1\n')
    env = {**os.environ, "RAG_CONFIG": str(config)}
    broken = rag("config", "show", env=env)
    assert broken.returncode == 2 and "`rag config unset mode`" in broken.stderr
    assert rag("config", "unset", "mode", env=env).returncode == 0
    assert rag("config", "set", "group", "medium", env=env).returncode == 0
    assert rag("config", "unset", "old_key", env=env).returncode == 0  # an unknown key written there
    assert rag("config", "show", env=env).returncode == 0
    assert rag("config", "get", "top_k", env=env).stdout == "4\n"  # the other values are kept
    assert rag("config", "get", "group", env=env).stdout == "medium\n"


def test_ingest_says_which_files_rag_rm_keeps_out(tmp_path, isolated_home):
    """After `rag rm FILE`, `rag ingest FOLDER` said `0 added ... 0 skipped` and nothing else,
    though the folder holds the file: it stays out by design, but the user was not told."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kept.txt").write_text("a note about bees")
    (docs / "other.txt").write_text("a second note about otters")
    assert rag("ingest", str(docs)).returncode == 0
    assert rag("rm", str(docs / "other.txt")).returncode == 0
    again = rag("ingest", str(docs))
    assert again.returncode == 0, again.stderr
    said = [line for line in again.stderr.splitlines() if "removed earlier with `rag rm`" in line]
    assert len(said) == 1 and str(docs / "other.txt") in said[0] and "`rag ingest`" in said[0]
    assert "other.txt" not in rag("ls").stdout  # still out: the message explains, it does not re-add
