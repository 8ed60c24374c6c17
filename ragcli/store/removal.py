"""What `rag rm` removes, and why it lasts: removed paths are remembered as exclusions.

Without a record, `rag rm notes/draft.md` would last only until the next `rag ingest`
(which re-walks the remembered roots and adds the file back). So each removed path is
stored in the index metadata (`excluded`, a JSON list of absolute paths) and later ingests
skip files under it. Naming a removed path (or a path inside it) in `rag ingest` is an
explicit request: the CLI lifts that exclusion first (`lift_exclusions`). Removing an
ingested root (or a folder above it, as `rag rm /` does) forgets the root instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ragcli.store.directory import DATABASE_NAME, IndexDirectory
from ragcli.store.interface import Backend

META_KEY = "excluded"


@dataclass(frozen=True)
class RemovalPlan:
    """The documents a `rag rm` would remove, out of how many indexed."""

    matched: tuple[str, ...]
    total: int
    targets: tuple[Path, ...]

    @property
    def everything(self) -> bool:
        """True when the removal empties the index through a folder (e.g. `rag rm /`)."""
        named = {str(target) for target in self.targets}
        return self.total > 0 and len(self.matched) == self.total and not set(self.matched) <= named


def plan_removal(index: Path, paths: Sequence[str]) -> RemovalPlan:
    """Which indexed documents lie under `paths` (nothing is changed).

    Raises:
        NotIndexed: there is no index.
        UsageError: a path is empty (what a command substitution that printed nothing gives):
            as a path it would mean the current folder and remove everything under it.
    """
    from ragcli.errors import UsageError
    from ragcli.store.chooser import open_backend

    if any(not str(path).strip() for path in paths):
        raise UsageError("a path to remove is empty: name the files or folders to remove (nothing changed)")
    targets = tuple(Path(stored_form(Path(p).expanduser().resolve())) for p in paths)
    backend = open_backend(index)
    try:
        matched = tuple(sorted(backend.documents_under(list(targets))))
        total = backend.counts()["documents"]
    finally:
        backend.close()
    return RemovalPlan(matched, total, targets)


def stored_form(path: str | Path) -> str:
    """A path as the index stores it: bytes of a name that is not UTF-8 (held by Python as lone
    surrogates) written as `\\xNN` escapes, as `ragcli.ingest.walk.display_path` does."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def exclusions(store: IndexDirectory | Backend) -> list[str]:
    return json.loads(store.get_meta(META_KEY, "[]") or "[]")


def record_exclusions(index: Path, targets: Iterable[Path]) -> None:
    """Remember removed paths so that later ingests skip them.

    A removed path that is (or contains) an ingested root drops that root from the roots
    a bare `rag ingest` walks again (so `rag rm /` empties the index for good); a path
    inside a root is recorded as an exclusion.
    """
    targets = [stored_form(t) for t in targets]
    store = IndexDirectory.open(index)
    try:
        roots = json.loads(store.get_meta("roots", "[]") or "[]")
        kept_roots = [r for r in roots if not any(_within(r, t) for t in targets)]
        inside = {t for t in targets if any(_within(t, r) for r in kept_roots)}
        store.set_meta("roots", json.dumps(kept_roots))
        store.set_meta(META_KEY, json.dumps(sorted(set(exclusions(store)) | inside)))
    finally:
        store.close()


def copy_exclusions(source: Path, target: Path) -> None:
    """Give a rebuilt index (`target`) the exclusions of the one it replaces, so that what
    `rag rm` removed stays removed after `rag ingest --rebuild`."""
    if not (Path(source) / DATABASE_NAME).exists():
        return
    store = IndexDirectory.open(source)
    try:
        excluded = exclusions(store)
    finally:
        store.close()
    if not excluded:
        return
    store = IndexDirectory.create(target)
    try:
        store.set_meta(META_KEY, json.dumps(excluded))
    finally:
        store.close()


def lift_exclusions(index: Path, paths: Sequence[Path]) -> None:
    """Forget exclusions that `paths` (named in `rag ingest`) are or lie inside."""
    if not (Path(index) / DATABASE_NAME).exists():
        return
    named = [stored_form(Path(p).expanduser().resolve()) for p in paths]
    store = IndexDirectory.open(index)
    try:
        excluded = exclusions(store)
        kept = [e for e in excluded if not any(_within(root, e) for root in named)]
        if kept != excluded:
            store.set_meta(META_KEY, json.dumps(kept))
    finally:
        store.close()


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def apply_exclusions(store: IndexDirectory | Backend, files: list[Path]) -> list[Path]:
    """`files` without those under a path `rag rm` removed."""
    excluded = exclusions(store)
    if not excluded:
        return files
    return [f for f in files if not any(_within(stored_form(f), e) for e in excluded)]
