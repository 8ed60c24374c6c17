"""ARCHITECTURE.md stays true: the modules it names exist, its layer table places every module,
and no module imports one from a layer below it in the table (lazy imports included)."""

from __future__ import annotations

import re

from test_import_graph import PACKAGE, import_graph, module_files

DOC = PACKAGE.parent / "ARCHITECTURE.md"
NAME = re.compile(r"`(ragcli(?:\.\w+)*)`")


def layer_rows(text: str) -> list[tuple[str, list[str]]]:
    """The rows of the layer table, bottom layer first: (layer, module names)."""
    table = text[text.index("| layer | modules |") :].split("\n\n")[0]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append((cells[0], NAME.findall(cells[1])))
    return rows


def placement(rows: list[tuple[str, list[str]]]) -> dict[str, int]:
    """Module or package name -> the first row naming it."""
    placed: dict[str, int] = {}
    for number, (_, names) in enumerate(rows):
        for name in names:
            placed.setdefault(name, number)
    return placed


def row_of(module: str, placed: dict[str, int], packages: set[str]) -> int | None:
    """The row of the module itself, else of the closest enclosing package (not the root) named;
    an unnamed package whose named submodules all sit in one row belongs to that row."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        name = ".".join(parts[:end])
        if name in placed and (end == len(parts) or name in packages):
            return placed[name]
    if module in placed:
        return placed[module]
    inner = {row for name, row in placed.items() if name.startswith(module + ".")}
    return inner.pop() if module in packages and len(inner) == 1 else None


def test_every_module_named_exists():
    modules = module_files()
    named = set(NAME.findall(DOC.read_text(encoding="utf-8")))
    assert len(named) > 40
    assert sorted(name for name in named if name not in modules) == []


def test_every_module_is_placed_in_a_layer():
    modules = module_files()
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    placed = placement(layer_rows(DOC.read_text(encoding="utf-8")))
    unplaced = sorted(name for name in modules if row_of(name, placed, packages) is None)
    assert unplaced == [], "add these modules to the layer table of ARCHITECTURE.md"


def test_no_module_imports_from_a_lower_layer():
    modules = module_files()
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    rows = layer_rows(DOC.read_text(encoding="utf-8"))
    placed = placement(rows)
    upward = []
    for source, targets in import_graph().items():
        for target in targets:
            here, there = row_of(source, placed, packages), row_of(target, placed, packages)
            if here is not None and there is not None and there > here:
                upward.append(f"{source} ({rows[here][0]}) imports {target} ({rows[there][0]})")
    assert sorted(upward) == []


def test_the_layer_check_sees_a_violation():
    rows = [("bottom", ["ragcli.errors"]), ("top", ["ragcli.cli"])]
    placed = placement(rows)
    assert row_of("ragcli.cli.query", placed, {"ragcli.cli"}) == 1
    assert row_of("ragcli.errors", placed, {"ragcli.cli"}) == 0
    assert row_of("ragcli.nowhere", placed, {"ragcli.cli"}) is None
    inner = placement([("bottom", ["ragcli.stage.a"]), ("top", ["ragcli.stage.b", "ragcli.other.c"])])
    assert row_of("ragcli.stage", inner, {"ragcli.stage"}) is None  # split between rows: name it
    assert row_of("ragcli.other", inner, {"ragcli.other"}) == 1
