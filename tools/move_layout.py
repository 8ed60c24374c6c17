#!/usr/bin/env python3
"""Move ragcli's modules into one package per pipeline stage (issue 14), mechanically.

Run it from the repository root on a clean work tree, after every branch is merged:

    python tools/move_layout.py            # move, rewrite, verify; then review `git diff -M --stat`
    python tools/move_layout.py --dry-run  # only print what would move and which files would change

What it does (LAYOUT_PLAN.md has the why of each move):

1. Refuses to run unless every old path in `MOVES` exists, no new path does, and the work tree
   is clean, so a second run cannot move anything twice (`ragcli.ingest` is an old module
   name *and* the new package name).
2. `git mv`s each file or folder in `MOVES` (and in `IF_PRESENT`, when there), creates the new
   packages' `__init__.py` (`NEW_PACKAGES`), and `git rm`s the compatibility shims in `REMOVED`
   and its own test (`RETIRED`).
3. Rewrites every reference to a moved module in the text files of the repository (`ROOTS`):
   dotted names wherever they appear (``from ragcli.query import``, ``import ragcli.query``,
   ``"ragcli.ask.load_generator"`` strings that tests monkeypatch, `LazyCommands`' module paths,
   docstrings, ARCHITECTURE.md), ``from ragcli import ask`` / ``from ragcli.retrieval import
   analysis`` submodule imports, and file paths (``ragcli/ask.py``, ``ragcli/readers/``).
   Longest names match first, and only whole names (``ragcli.ask`` never matches inside
   ``ragcli.asker``; ``ragcli.ingest.ingest`` is module ``ragcli.ingest`` plus attribute ``ingest``).
4. Lists ragcli modules it does not know (added by a branch after this plan): they stay where
   they are and must be placed by hand (in `MOVES` and in ARCHITECTURE.md's layer table).
5. Verifies: every Python file compiles, every ragcli module imports in a fresh interpreter,
   and no old dotted name or path is left (except in LAYOUT_PLAN.md and this script).

It commits nothing: review, run the suite, commit.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

# Old path -> new path (files, or whole folders). The packages of each stage:
#   ingest/ (walk, readers, splitting, the pipeline), store/ (+ status), retrieval/ (search
#   orchestration, retrievers, fusion, filters, rerank, rewrite), answer/ (ask, cache, context,
#   prompting, extractive, sentences, support). embedding/, evaluation/ and cli/ keep their
#   place; the shared ground (analysis, choices, config, errors, types, llm, locking) and the
#   front door (index, models, doctor) stay at the top level.
MOVES: dict[str, str] = {
    "ragcli/walk.py": "ragcli/ingest/walk.py",
    "ragcli/readers": "ragcli/ingest/readers",
    "ragcli/splitting.py": "ragcli/ingest/splitting.py",
    "ragcli/ingest.py": "ragcli/ingest/pipeline.py",
    "ragcli/status.py": "ragcli/store/status.py",
    "ragcli/query.py": "ragcli/retrieval/search.py",
    "ragcli/rerank.py": "ragcli/retrieval/rerank.py",
    "ragcli/rewrite.py": "ragcli/retrieval/rewrite.py",
    "ragcli/ask.py": "ragcli/answer/ask.py",
    "ragcli/answer_cache.py": "ragcli/answer/cache.py",
    "ragcli/context.py": "ragcli/answer/context.py",
    "ragcli/prompting.py": "ragcli/answer/prompting.py",
    "ragcli/extractive.py": "ragcli/answer/extractive.py",
    "ragcli/sentences.py": "ragcli/answer/sentences.py",
    "ragcli/support.py": "ragcli/answer/support.py",
}

# Modules other branches of this session add, moved when present (the rest of `MOVES` must be).
IF_PRESENT: dict[str, str] = {
    "ragcli/watch.py": "ragcli/ingest/watch.py",            # `rag ingest --watch` (agents)
    "ragcli/removal.py": "ragcli/store/removal.py",         # `rag rm` exclusions (pipes)
    "ragcli/documents.py": "ragcli/retrieval/documents.py",  # `rag get`: stored text read back (agents)
    "ragcli/evidence.py": "ragcli/answer/evidence.py",      # evidence-first answers (answers)
    "ragcli/opener.py": "ragcli/cli/opener.py",             # `rag open`: a file in the user's viewer (agents)
}
# Top-level modules that stay: shared ground, front door, and packages.
STAYS = {"__init__", "__main__", "analysis", "choices", "config", "errors", "types", "llm", "locking",
         "index", "models", "doctor", "embedding", "evaluation", "cli", "store", "retrieval",
         # added by other branches of this session: GGUF runtime and logging (shared ground),
         # agent tools and the MCP server (front door)
         "gguf_info", "model_catalog", "qwen_model", "stages", "agent_tools", "mcp_server"}

# Shims kept only so branches written against the old name merged; their users are rewritten.
REMOVED: dict[str, str] = {
    "ragcli/retrieval/analysis.py": "ragcli/analysis.py",
}

# Checks of this script's input, meaningless once it has run.
RETIRED = ("tests/test_move_layout.py",)

NEW_PACKAGES: dict[str, str] = {
    "ragcli/ingest/__init__.py": '"""Ingest: files to chunks in the store.\n\n'
    "`walk` lists the files, `readers` turns each into a `Document`, `splitting` cuts it into\n"
    "chunks, `pipeline` runs it all (`ingest`, `ingest_documents`, `remove_paths`).\n"
    'Submodules are imported where needed, so importing this package loads nothing.\n"""\n',
    "ragcli/answer/__init__.py": '"""Answers: from retrieved hits to a cited answer (`ask.Asker`).\n\n'
    "`cache` (finished answers), `context` (sources within the token budget), `prompting`\n"
    "(messages, citations), `extractive` and `sentences` (answers taken from the text),\n"
    "`support` (each sentence's backing). Submodules are imported where needed.\n" '"""\n',
}

# Where references are rewritten. LAYOUT_PLAN.md and this script keep the old names.
ROOTS = ("ragcli", "tests", "benchmarks", "fixtures", "tools", "README.md", "ARCHITECTURE.md",
         "pyproject.toml", ".ci")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".sh", ".json", ""}
KEEP = {"LAYOUT_PLAN.md", "tools/move_layout.py"}


# Marks a name the rewrite already produced, so the next pass leaves it alone.
PROTECT = "\x00"


def dotted(path: str) -> str:
    """``ragcli/readers/base.py`` -> ``ragcli.readers.base``; a folder or __init__ -> the package."""
    parts = Path(path).with_suffix("").parts if path.endswith(".py") else Path(path).parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def present_moves(root: Path) -> dict[str, str]:
    """`MOVES` and the `IF_PRESENT` moves whose file exists."""
    return {**MOVES, **{old: new for old, new in IF_PRESENT.items() if (root / old).exists()}}


def module_map(root: Path) -> dict[str, str]:
    """Every old dotted module name -> its new name (folders: the package and each submodule)."""
    mapping: dict[str, str] = {}
    for old, new in {**present_moves(root), **REMOVED}.items():
        mapping[dotted(old)] = dotted(new)
        if (root / old).is_dir():
            for file in sorted((root / old).rglob("*.py")):
                relative = file.relative_to(root / old).as_posix()
                mapping[dotted(f"{old}/{relative}")] = dotted(f"{new}/{relative}")
    return mapping


def path_map(root: Path) -> dict[str, str]:
    """Old file paths (and folder prefixes, with a trailing /) -> new ones."""
    moves = present_moves(root)
    paths = {old: new for old, new in {**moves, **REMOVED}.items() if old.endswith(".py")}
    paths.update({old + "/": new + "/" for old, new in moves.items() if not old.endswith(".py")})
    return paths


def alternation(names) -> str:
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))


class Rewriter:
    """Rewrites old module names and paths in one text."""

    def __init__(self, modules: dict[str, str], paths: dict[str, str]) -> None:
        self.modules = modules
        self.paths = paths
        self.dotted = re.compile(rf"(?<![\w.{PROTECT}])({alternation(modules)})(?!\w)")
        self.path = re.compile(rf"(?<![\w.])({alternation(paths)})")
        # `from ragcli.x import a, b as c` on one line, where some `ragcli.x.a` is a moved module.
        self.from_import = re.compile(r"^(?P<indent>[ \t]*)from (?P<base>ragcli(?:\.\w+)*) import "
                                      r"(?P<names>[\w, \t]+?)[ \t]*(?P<comment>#.*)?$", re.MULTILINE)

    def __call__(self, text: str) -> str:
        text = self.from_import.sub(self._submodule_imports, text)
        text = self.dotted.sub(lambda m: self.modules[m.group(1)], text)
        return self.path.sub(lambda m: self.paths[m.group(1)], text).replace(PROTECT, "")

    def _submodule_imports(self, match: re.Match) -> str:
        base, indent = match.group("base"), match.group("indent")
        items = [item.strip() for item in match.group("names").split(",") if item.strip()]
        kept, lines = [], []
        for item in items:
            name, _, alias = (part.strip() for part in item.partition(" as "))
            old = f"{base}.{name}"
            if old in self.modules:
                parent, _, leaf = self.modules[old].rpartition(".")
                local = alias or name
                rename = f" as {local}" if local != leaf else ""
                # Already the new name: protected from the dotted pass (`ragcli.ingest` is old and new).
                lines.append(f"{indent}from {PROTECT}{parent} import {leaf}{rename}")
            else:
                kept.append(item)
        if not lines:
            return match.group(0)
        if kept:
            # The base module itself may have moved too: the dotted pass rewrites it afterwards.
            lines.insert(0, f"{indent}from {base} import {', '.join(kept)}")
        if match.group("comment"):
            lines[0] += "  " + match.group("comment")
        return "\n".join(lines)


def text_files(root: Path) -> list[Path]:
    files = []
    for name in ROOTS:
        start = root / name
        candidates = [start] if start.is_file() else sorted(start.rglob("*")) if start.is_dir() else []
        for path in candidates:
            relative = path.relative_to(root).as_posix()
            if (path.is_file() and path.suffix in SUFFIXES and relative not in KEEP
                    and "__pycache__" not in path.parts and not relative.startswith(".git/")):
                files.append(path)
    return files


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def check_preconditions(root: Path, *, dry_run: bool) -> None:
    missing = [old for old in [*MOVES, *REMOVED] if not (root / old).exists()]
    present = [new for new in [*present_moves(root).values(), *NEW_PACKAGES] if (root / new).exists()]
    problems = [f"missing (already moved?): {', '.join(missing)}"] if missing else []
    problems += [f"already exists: {', '.join(present)}"] if present else []
    if not dry_run and git(root, "status", "--porcelain", "--untracked-files=no").strip():
        problems.append("the work tree has uncommitted changes: commit or stash them first")
    if problems:
        sys.exit("move_layout: " + "; ".join(problems))


def unknown_modules(root: Path, modules: dict[str, str]) -> list[str]:
    """Top-level ragcli modules neither moved nor known to stay (added by a later branch)."""
    moved = {name.split(".")[1] for name in modules}
    found = {path.stem if path.suffix == ".py" else path.name for path in (root / "ragcli").iterdir()
             if (path.suffix == ".py" or (path / "__init__.py").is_file())}
    return sorted(found - STAYS - moved)


def move(root: Path) -> None:
    for old, new in present_moves(root).items():
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        git(root, "mv", old, new)
    for package, text in NEW_PACKAGES.items():
        (root / package).write_text(text, encoding="utf-8")
        git(root, "add", package)
    for shim in REMOVED:
        git(root, "rm", "-q", shim)
    for name in RETIRED:
        if (root / name).exists():
            git(root, "rm", "-q", name)


def rewrite(root: Path, rewriter: Rewriter, *, dry_run: bool,
            limit: int = 110) -> tuple[list[str], list[str]]:
    """Rewrite every text file; returns the files changed and the Python lines the rewrite made
    longer than `limit` (ruff E501), as ``path:line``, to wrap by hand."""
    changed, wide = [], []
    for path in text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewriter(text)
        if new == text:
            continue
        name = path.relative_to(root).as_posix()
        changed.append(name)
        if name.endswith(".py"):
            before = {rewriter(line) for line in text.splitlines() if len(line) > limit}
            wide += [f"{name}:{number}" for number, line in enumerate(new.splitlines(), 1)
                     if len(line) > limit and line not in before]
        if not dry_run:
            path.write_text(new, encoding="utf-8")
    return changed, wide


def verify(root: Path, modules: dict[str, str], paths: dict[str, str]) -> list[str]:
    """Problems left after the move: files that do not compile, modules that do not import, old names."""
    problems = []
    for path in sorted((root / "ragcli").rglob("*.py")) + sorted((root / "tests").rglob("*.py")):
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        except SyntaxError as error:
            problems.append(f"does not compile: {error}")
    existing = {dotted(p.relative_to(root).as_posix()) for p in (root / "ragcli").rglob("*.py")}
    names = sorted(existing - {"ragcli.__main__"})  # importing __main__ would run the app
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", code, *names], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": ""})
    if done.returncode:
        problems.append("a module does not import:\n" + done.stderr[-2000:])
    # An old name that is also a new package (ragcli.ingest) is no longer stale.
    stale = Rewriter({old: old for old in modules if old not in existing},
                     {old: old for old in paths if not (root / old).exists()})
    for path in text_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in list(stale.dotted.finditer(text)) + list(stale.path.finditer(text)):
            line = text.count("\n", 0, match.start()) + 1
            problems.append(f"old name left: {path.relative_to(root)}:{line}: {match.group(1)}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and the files that would change")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: here)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    check_preconditions(root, dry_run=args.dry_run)
    modules, paths = module_map(root), path_map(root)
    rewriter = Rewriter(modules, paths)
    for old, new in sorted(modules.items()):
        print(f"{old} -> {new}")
    unknown = unknown_modules(root, modules)
    if not args.dry_run:
        move(root)
    changed, wide = rewrite(root, rewriter, dry_run=args.dry_run)
    print(f"\n{len(changed)} files {'would change' if args.dry_run else 'rewritten'}:")
    print("\n".join(f"  {name}" for name in changed))
    if unknown:
        print("\nnot in the plan, left in place (add them to MOVES and ARCHITECTURE.md by hand): "
              + ", ".join(f"ragcli/{name}" for name in unknown))
    if args.dry_run:
        return 0
    if wide:
        print("\nlines now longer than 110 characters (wrap them; `ruff check` lists them too): "
              + ", ".join(wide))
    problems = verify(root, modules, paths)
    print("\n".join(["", *problems]) if problems else "\nverified: everything compiles and imports, "
          "no old module name or path is left")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
