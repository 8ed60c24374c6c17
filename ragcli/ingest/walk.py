"""Finding the files to ingest under the roots a user names."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator, Sequence

from ragcli.errors import RagError, UsageError
from ragcli.store.ownership import MARKER_NAME


@dataclass(frozen=True)
class FileFilter:
    """Include/exclude patterns, gitignore-style, matched against the path relative to its root.

    As in a ``.gitignore`` (``pathspec`` implements its rules): a pattern without a slash
    (``*.pdf``, ``genindex*``, ``_sources``) matches at any depth, one with a slash is anchored
    at the root (``_sources/*``: the root's own ``_sources`` folder; ``**/_sources/*``: any).
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @cached_property
    def _include(self):
        return _spec(self.include) if self.include else None

    @cached_property
    def _exclude(self):
        return _spec(self.exclude) if self.exclude else None

    def accepts(self, relative: str) -> bool:
        if self._include is not None and not self._include.match_file(relative):
            return False
        return self._exclude is None or not self._exclude.match_file(relative)

    def unmatched(self, relatives: Sequence[str]) -> list[str]:
        """The patterns (include and exclude) that match none of these relative paths."""
        patterns = dict.fromkeys((*self.include, *self.exclude))
        return [
            pattern
            for pattern in patterns
            if not any(_spec((pattern,)).match_file(relative) for relative in relatives)
        ]


def _spec(patterns: Sequence[str]):
    # pathspec: the maintained implementation of git's wildmatch and .gitignore rules.
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


def unmatched_patterns(roots: Sequence[Path], file_filter: FileFilter) -> list[str]:
    """The include/exclude patterns that match no file under any of the roots (a likely typo)."""
    if not (file_filter.include or file_filter.exclude):
        return []
    relatives = [
        path.relative_to(root).as_posix()
        for root in roots
        if root.is_dir()
        for path in walk_files(root, FileFilter())
    ]
    return file_filter.unmatched(relatives)


def resolve_roots(paths: Sequence[str | Path]) -> list[Path]:
    """Absolute, de-duplicated roots.

    Raises:
        UsageError: a path does not exist or is empty.
    """
    roots: list[Path] = []
    for raw in paths:
        if not str(raw).strip():  # a command substitution that printed nothing, not "this folder"
            raise UsageError("a path to ingest is empty: name the folders or files to read")
        path = Path(raw).expanduser()
        if not path.exists():
            raise UsageError(f"{raw}: no such file or directory")
        resolved = path.resolve()
        if resolved not in roots:
            roots.append(resolved)
    return roots


def refuse_index_in_roots(index: Path, roots: Sequence[Path]) -> None:
    """An index folder must not be, or contain, a folder it ingests: its files would be read as
    documents and `--rebuild`, which replaces the index folder, would take the user's with it.

    Raises:
        RagError: a root is the index folder or lies inside it (exit 1, as for any folder
            rag refuses to write into).
    """
    folder = Path(index).expanduser().resolve()
    for root in (Path(r).expanduser().resolve() for r in roots):
        if root == folder or folder in root.parents:
            raise RagError(
                f"--index {index} is the folder being ingested ({root}) or holds it: "
                "keep the index in a folder of its own, outside the documents (nothing was changed)"
            )


def display_path(path: str) -> str:
    """A path as text that is always valid UTF-8: bytes that are not (a name like `bad_\\xff.txt`,
    which Python holds as lone surrogates) are written as `\\xff` escapes.

    Valid names are returned unchanged; the index stores and compares paths in this form.
    """
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def disk_path(shown: str) -> Path:
    """The file a stored (display) path names: `display_path` undone where the text as given
    does not exist and holds `\\xNN` escapes (bytes of a name that is not UTF-8)."""
    path = Path(shown)
    if "\\x" not in shown or path.exists():
        return path
    raw = re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), shown.encode("utf-8"))
    return Path(os.fsdecode(raw))


def walk_files(
    root: Path, file_filter: FileFilter, on_error: "Callable[[Path, str], None] | None" = None
) -> Iterator[Path]:
    """Entries under a root in sorted order, skipping hidden files and folders.

    Every entry that is not a folder is yielded, a named pipe or a dangling symlink included,
    so the reader can report it (it opens only regular files, never waiting on a pipe). A root
    that is not a folder is yielded as is: naming a file explicitly means the user wants it.
    A symlink to a file inside the root is skipped (the file itself is walked); one pointing
    outside is yielded under its own name, so it is one document of this folder.

    Args:
        on_error: called with each folder the walk cannot enter and the reason; the rest is
            walked (default: such a folder is left out silently).
    """
    if not root.is_dir():
        yield root
        return
    yield from _walk(root, root, file_filter, IgnoreRules(root), on_error)


def _walk(
    top: Path,
    root: Path,
    file_filter: FileFilter,
    ignores: "IgnoreRules",
    on_error: "Callable[[Path, str], None] | None" = None,
) -> Iterator[Path]:
    """The entries under folder `top` of a walk of `root`: `ignores` holds the rules of the
    folders above `top`; `file_filter` matches paths relative to `root`."""
    tell = _unreadable_folder(on_error)
    for folder, dirs, files in os.walk(top, onerror=lambda error: tell(Path(error.filename), error)):
        ignores.enter(Path(folder))
        dirs[:] = sorted(d for d in dirs if _descends(Path(folder) / d, ignores, tell))
        for name in sorted(files):
            if hidden_or_lock_file(name):
                continue
            path = Path(folder) / name
            if (
                not ignores.skips(path, False)
                and file_filter.accepts(path.relative_to(root).as_posix())
                and not link_into(path, root)
            ):
                yield path


def _unreadable_folder(on_error: "Callable[[Path, str], None] | None") -> Callable[[Path, OSError], None]:
    """What the walk does with a folder it cannot enter: one reason handed to `on_error`."""

    def tell(folder: Path, error: OSError) -> None:
        if on_error is not None:
            on_error(folder, f"cannot read folder ({error.strerror or error}); check its permissions")

    return tell


def _descends(folder: Path, ignores: "IgnoreRules", tell: Callable[[Path, OSError], None]) -> bool:
    """Whether the walk goes into `folder`; one it cannot look into is told and left out."""
    if hidden_or_lock_file(folder.name):
        return False
    try:
        # An index folder inside the root holds ragcli's own files, never documents to read.
        return not (folder / MARKER_NAME).is_file() and not ignores.skips(folder, True)
    except OSError as error:  # a folder without search permission: nothing in it can be stat'ed
        tell(folder, error)
        return False


def hidden_or_lock_file(name: str) -> bool:
    """A name the walk skips: a hidden file or folder, or the owner file (`~$report.docx`) Word,
    Excel and PowerPoint keep beside a document while it is open, which is not a document."""
    return name.startswith((".", "~$"))


def link_into(path: Path, root: Path) -> bool:
    """A symlink whose target lies under `root` (walked there already)."""
    if not path.is_symlink():
        return False
    try:
        target = os.path.realpath(path, strict=True)
    except OSError:  # dangling or a loop: yielded, for the reader to report
        return False
    return Path(target).is_relative_to(root)


# Folders that hold tools' output, never a person's documents.
_GENERATED_FOLDERS = frozenset({"node_modules", "__pycache__", "bower_components"})
# Build output folders, skipped only beside a file that marks a software project.
_BUILD_FOLDERS = frozenset({"build", "dist", "target", "out"})
_PROJECT_MARKERS = (
    "pyproject.toml",
    "setup.py",
    "package.json",
    "Cargo.toml",
    "pom.xml",
    "go.mod",
    "CMakeLists.txt",
)
IGNORE_FILES = (".gitignore", ".ragignore")


class IgnoreRules:
    """What a code-aware walk leaves out: `.gitignore` and `.ragignore` patterns (git's own
    rules, through pathspec), dependency and cache folders, virtualenvs and build outputs.

    Each folder's ignore files apply to what lies under it, as in git.
    """

    def __init__(self, root: Path):
        self.root = root
        self.specs: list[tuple[Path, object]] = []

    def enter(self, folder: Path) -> None:
        """Load the ignore files of a folder the walk has entered."""
        import pathspec

        self.specs = [(base, spec) for base, spec in self.specs if folder.is_relative_to(base)]
        lines: list[str] = []
        for name in IGNORE_FILES:
            try:
                lines += (folder / name).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
        if lines:
            self.specs.append((folder, pathspec.GitIgnoreSpec.from_lines(lines)))

    def skips(self, path: Path, is_folder: bool) -> bool:
        """Whether the walk leaves out this file or folder."""
        if is_folder and _generated_folder(path):
            return True
        for base, spec in self.specs:
            relative = path.relative_to(base).as_posix() + ("/" if is_folder else "")
            if spec.match_file(relative):
                return True
        return False


def _rules_above(root: Path, path: Path) -> "IgnoreRules | None":
    """The ignore rules a walk of `root` holds on reaching `path` (every folder's ignore files
    from `root` down to its parent), or None when the walk never gets there (a folder on the
    way is ignored or generated)."""
    rules = IgnoreRules(root)
    rules.enter(root)
    folder = root
    for part in path.relative_to(root).parts[:-1]:
        folder = folder / part
        if rules.skips(folder, is_folder=True):
            return None
        rules.enter(folder)
    return rules


def files_to_read(
    root: Path, path: Path, file_filter: FileFilter, on_error: "Callable[[Path, str], None] | None" = None
) -> list[Path]:
    """The files a walk of `root` would read at or under `path` (a file or a folder a watcher
    saw change): patterns and ignore files matched from the root, as for a whole ingest. A root
    that is a file was named explicitly and is read whatever the patterns say.

    Args:
        on_error: as for `walk_files`: told each folder under `path` the walk cannot enter.

    Raises:
        OSError: `path` itself cannot be looked at (it lies in a folder without permission)."""
    if path == root:
        return list(walk_files(root, file_filter, on_error))
    rules = _rules_above(root, path)
    if rules is None or _through_linked_folder(root, path) or rules.skips(path, is_folder=path.is_dir()):
        return []
    if path.is_dir():
        return list(_walk(path, root, file_filter, rules, on_error))
    accepted = file_filter.accepts(path.relative_to(root).as_posix())
    return [path] if accepted and not link_into(path, root) else []


def _through_linked_folder(root: Path, path: Path) -> bool:
    """Whether `path` is, or lies in, a symlinked folder under `root`: a whole walk never
    enters one (a link to `.` or to a folder elsewhere would read a tree twice, or forever)."""
    folder = path
    while folder != root and root in folder.parents:
        if folder.is_symlink() and folder.is_dir():
            return True
        folder = folder.parent
    return False


def _generated_folder(path: Path) -> bool:
    if path.name in _GENERATED_FOLDERS or (path / "pyvenv.cfg").is_file():
        return True
    return path.name in _BUILD_FOLDERS and any(
        (path.parent / marker).is_file() for marker in _PROJECT_MARKERS
    )
