"""The import graph of ragcli has no cycles, between modules or between packages.

Every import counts, read with `ast`: top-level ones, the lazy ones inside functions and
the ones under `if TYPE_CHECKING:`, since each is a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ragcli"


def module_files(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The ragcli modules `name` imports (`from pkg import submodule` counts as the submodule)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.update(
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
            )
    return {module for module in found if module in known and module != name}


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between ragcli's top-level modules and packages (`ragcli.store`, `ragcli.cli`, ...)."""

    def top(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for source, targets in graph.items():
        packages.setdefault(top(source), set()).update(top(t) for t in targets if top(t) != top(source))
    return packages


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe(graph: dict[str, set[str]], component: list[str]) -> str:
    return "; ".join(f"{a} -> {', '.join(sorted(graph[a] & set(component)))}" for a in component)


def test_no_module_imports_itself_back():
    graph = import_graph()
    assert len(graph) > 50 and "ragcli.index" in graph["ragcli.cli.query"]  # lazy imports are seen
    assert [describe(graph, c) for c in cycles(graph)] == []


def test_no_package_imports_itself_back():
    graph = package_graph(import_graph())
    assert "ragcli.store" in graph["ragcli.retrieval"]
    assert [describe(graph, c) for c in cycles(graph)] == []


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path):
    package = tmp_path / "ragcli"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("def load():\n    from ragcli.sub import b\n")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n"
    )
    (package / "sub" / "c.py").write_text("from ragcli import sub\n")
    (package / "a.py").write_text("import ragcli.sub.c\n")
    graph = import_graph(package)
    assert graph["ragcli.sub"] == {"ragcli.sub.b"} and graph["ragcli.sub.b"] == {"ragcli.sub.c"}
    assert cycles(graph) == [["ragcli.sub", "ragcli.sub.b", "ragcli.sub.c"]]
    assert package_graph(graph)["ragcli.a"] == {"ragcli.sub"} and cycles(package_graph(graph)) == []
