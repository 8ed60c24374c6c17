"""The benchmark scripts name ragcli's modules and functions directly; a move inside the package
must not leave one unable to start. Checked from their source (their peers, such as bm25s, are
an optional extra), so this runs everywhere."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py"))


def ragcli_imports(script: Path) -> list[tuple[str, str]]:
    """(module, name) for every ``from ragcli... import name`` in the script, at any depth."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ragcli")
        for alias in node.names
    ]


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.name)
def test_every_ragcli_name_a_benchmark_imports_exists(script):
    missing = [f"{module}.{name}" for module, name in ragcli_imports(script) if not _has(module, name)]
    assert not missing, f"{script.name} imports what ragcli no longer has: {missing}"


def _has(module: str, name: str) -> bool:
    """`name` is an attribute of `module`, or a submodule of it when it is a package."""
    loaded = importlib.import_module(module)
    if hasattr(loaded, name):
        return True
    return hasattr(loaded, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None
