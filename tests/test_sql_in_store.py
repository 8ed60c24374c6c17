"""SQL is written only in `ragcli/store/`: every other module asks a named `Store` method (or a
`ragcli.store.*` function), so the schema can change in one package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import ragcli

PACKAGE = Path(ragcli.__file__).parent

# A statement or the clause of one; case-sensitive, as SQL is written here, so prose such as
# "select a reranker" or "where the file lives" is not mistaken for it.
SQL = re.compile(
    r"\bSELECT\b.*\bFROM\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b"
    r"|\bCREATE\s+(TABLE|INDEX|VIRTUAL|TRIGGER)\b|\bDROP\s+(TABLE|INDEX)\b|\bPRAGMA\s+\w+"
    r"|\b[\w.]+\s+(=|!=|>=|<=|<|>|GLOB|LIKE|IN)\s+\(?\?"
    r"|\bJOIN\s+\w+\s+\w+\s+ON\b|\bjson_each\(",
    re.S,
)

# Left outside store/ on purpose, each with its reason.
ALLOWED: set[str] = set()  # none: every query is a named Store method


def sql_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal (f-strings by their constant parts) that reads as SQL."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            text = "".join(part.value for part in node.values if isinstance(part, ast.Constant))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if SQL.search(text):
            found.append((node.lineno, text[:80]))
    return found


def test_the_pattern_sees_sql_and_not_prose():
    assert SQL.search("SELECT c.id FROM chunks c WHERE c.group_name = ?")
    assert SQL.search("DELETE FROM answers")
    assert SQL.search("PRAGMA integrity_check")
    assert SQL.search("d.path GLOB ?") and SQL.search("c.id IN (?, ?)") and SQL.search("group_name = ?")
    assert SQL.search("EXISTS (SELECT 1 FROM json_each(d.metadata, ?) WHERE x)")
    assert not SQL.search("Select the reranker; where the file lives, from the index.")
    assert not SQL.search("Compiled metadata filters: a WHERE clause over `documents d`.")


def test_no_sql_outside_the_store_package():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("store/") or relative in ALLOWED:
            continue
        if found := sql_literals(path):
            offenders[relative] = found
    assert offenders == {}


def test_every_allowed_file_still_needs_its_exception():
    """An exception that is no longer needed is removed, so the list never grows stale."""
    for relative in ALLOWED:
        assert sql_literals(PACKAGE / relative), f"{relative} has no SQL left: drop it from ALLOWED"
