"""docs/reference/json.md lists every JSON shape; the installed `rag` must print exactly those keys."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from runner import rag
from test_pipes import notes

DOC = Path(__file__).resolve().parent.parent / "docs" / "reference" / "json.md"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def documented() -> dict[str, dict[str, list[str]]]:
    """`### \\`rag ...\\`` headings, each with `- \\`path\\`: \\`key\\`, ...` lines."""
    shapes: dict[str, dict[str, list[str]]] = {}
    command = None
    for line in DOC.read_text().splitlines():
        heading = re.match(r"### `(rag [^`]+)`", line)
        if line.startswith("### "):  # another heading (an HTTP shape) ends the command's list
            command = heading.group(1) if heading else None
        if heading:
            shapes[command] = {}
        bullet = re.match(r"- `([^`]+)`: (.*)", line)
        if bullet and command:
            shapes[command][bullet.group(1)] = re.findall(r"`([^`]+)`", bullet.group(2))
    return shapes


def values_at(document, path: str) -> list:
    """Every object at a documented path: `.` the document, `.x[]` list items, `.x.*` map values."""
    found = [document]
    for part in re.findall(r"\.([^.\[]+)(\[\])?", path):
        name, is_list = part
        if name == "*":
            found = [value for item in found for value in item.values()]
        else:
            found = [item[name] for item in found if item.get(name) is not None]
        if is_list:
            found = [value for item in found for value in item]
    return found


def test_the_document_covers_every_command_that_prints_json():
    commands = set(documented())
    for expected in (
        "rag status --json",
        "rag ls --json",
        "rag ingest --json",
        "rag rm --json",
        "rag config show --json",
        "rag doctor --json",
        "rag query --json",
        "rag query --jsonl",
        "rag ask --json",
        "rag eval retrieval --json",
        "rag eval answers --json",
        "rag eval generate",
    ):
        assert expected in commands


def arguments(command: str, docs: Path) -> list[str] | None:
    """The real invocation for a documented command (None: covered elsewhere, too slow here)."""
    extra = {
        "rag ingest --json": [str(docs), str(docs.parent / "broken")],
        "rag rm --json": [str(docs / "engine-000.txt")],
        "rag query --json": ["gear box", "--mode", "hybrid"],
        "rag query --jsonl": ["gear box", "--mode", "hybrid"],
        "rag ask --json": ["How often is the gear box oiled?", "--mode", "bm25", "--no-cache"],
        "rag eval retrieval --json": [str(FIXTURES / "beir-mini"), "--modes", "bm25"],
    }
    if command in ("rag eval answers --json", "rag eval generate"):
        return None  # they run the GGUF model per question: tests/test_cli_eval.py covers them
    words = shlex.split(command)[1:]
    return words + extra.get(command, [])


@pytest.mark.model
def test_documented_keys_are_what_the_commands_print(tmp_path, isolated_home):
    docs = notes(tmp_path / "docs", 3)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    assert rag("ingest", str(docs)).returncode == 0
    checked = 0
    for command, shape in documented().items():
        args = arguments(command, docs)
        if args is None:
            continue
        result = rag(*args)
        assert result.returncode == 0, (command, result.stderr)
        document = json.loads(result.stdout.splitlines()[0])
        for path, keys in shape.items():
            objects = values_at(document, path)
            assert objects or "[]" in path, (command, path)  # an empty list has nothing to check
            for obj in objects:
                assert sorted(obj) == sorted(keys), (command, path)
        checked += 1
    assert checked >= 11


@pytest.mark.parametrize("command", ["answers", "generate"])
def test_eval_shapes_match_the_code(command):
    """The two model-bound shapes, checked against the code that builds them."""
    shape = documented()["rag eval answers --json" if command == "answers" else "rag eval generate"]
    source = (
        Path(sys.modules["ragcli"].__file__).parent
        / "evaluation"
        / ("answer_eval.py" if command == "answers" else "generate.py")
    )
    text = source.read_text()
    for keys in shape.values():
        for key in keys:
            if key not in ("schema_version", "kind"):
                assert f'"{key}"' in text, key
