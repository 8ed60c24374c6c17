"""What each ingested root was read with, remembered in the index for a bare `rag ingest`.

An ingest records, per root, every option that shapes what is read from it: the
include/exclude patterns and the chunk group (whose split settings the index keeps with the
group). `rag ingest` with no paths, and `rag ingest --watch` with none, read each root again
with the same options; naming a root with other flags replaces its options, and says so.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ragcli.ingest.walk import FileFilter

META_KEY = "root_options"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RootOptions:
    """The options one root is ingested with."""

    group: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def file_filter(self) -> FileFilter:
        return FileFilter(self.include, self.exclude)

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "include": list(self.include), "exclude": list(self.exclude)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RootOptions:
        return cls(str(data["group"]), tuple(data.get("include", ())), tuple(data.get("exclude", ())))

    def describe(self) -> str:
        """One line: `group medium, include '*.md', exclude '_sources/*'`."""
        parts = [f"group {self.group}"]
        parts += [f"include {pattern!r}" for pattern in self.include]
        parts += [f"exclude {pattern!r}" for pattern in self.exclude]
        return ", ".join(parts)


def read_root_options(raw: str | None) -> dict[str, RootOptions]:
    """The stored options per root (the meta value as the store keeps it)."""
    try:
        stored = json.loads(raw or "{}")
        return {root: RootOptions.from_dict(options) for root, options in stored.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        # Loud, not fatal: the roots are still known; their options must be given again.
        log.warning("the index's remembered ingest options are unreadable (%s): give the flags again", error)
        return {}


def merged_root_options(raw: str | None, roots: Sequence[Path], options: RootOptions) -> str:
    """The meta value with `roots` now read with `options` (the others kept)."""
    stored = {root: value.to_dict() for root, value in read_root_options(raw).items()}
    stored.update({str(root): options.to_dict() for root in roots})
    return json.dumps(stored, sort_keys=True)


def changes(before: RootOptions, after: RootOptions) -> list[str]:
    """What differs, in words: `exclude was '_sources/*', now none`."""

    def shown(patterns: tuple[str, ...]) -> str:
        return ", ".join(repr(p) for p in patterns) or "none"

    said = []
    if before.group != after.group:
        said.append(f"group was {before.group}, now {after.group}")
    for name in ("include", "exclude"):
        old, new = getattr(before, name), getattr(after, name)
        if old != new:
            said.append(f"{name} was {shown(old)}, now {shown(new)}")
    return said


def known_roots(index: Path) -> list[str]:
    """The roots earlier ingests recorded, for `rag ingest` with no paths.

    Raises:
        UsageError: nothing was ingested before, so there is nothing to default to.
    """
    from ragcli.errors import UsageError
    from ragcli.store.directory import read_index_meta

    roots = json.loads(read_index_meta(index, "roots") or "[]")
    if not roots:
        raise UsageError("no paths given and none ingested before: rag ingest DIR [DIR ...]")
    return roots
