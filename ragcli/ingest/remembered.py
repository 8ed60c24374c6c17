"""What each ingested root was read with, remembered in the index for a bare `rag ingest`.

An ingest records, per root and chunk group (whose split settings the index keeps with the
group), the include/exclude patterns that shape what is read from it. A root read into
several groups remembers each group with its own patterns. `rag ingest` with no paths reads
every root again into every group it was read into, each with its remembered patterns;
naming a root with other flags replaces its patterns, and says so.

Stored form (meta `root_options`), one entry per root::

    {"ROOT": {"group": G, "include": [...], "exclude": [...], "groups": [{"group": ...}, ...]}}

`groups` lists every group, the most recently ingested last; the top-level keys repeat that
last one, which is all an index written before groups were remembered side by side holds
(read as a root with one group).
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


RootGroups = dict[str, RootOptions]
"""One root's options by group name, the most recently ingested group last."""


def read_root_options(raw: str | None) -> dict[str, RootGroups]:
    """The stored options per root and group (the meta value as the store keeps it)."""
    try:
        return parse_root_options(json.loads(raw or "{}"))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        # Loud, not fatal: the roots are still known; their options must be given again.
        log.warning("the index's remembered ingest options are unreadable (%s): give the flags again", error)
        return {}


def parse_root_options(stored: Mapping[str, Any]) -> dict[str, RootGroups]:
    """Each root's groups from the stored mapping; an entry without `groups` (the format of
    indexes written before groups were remembered side by side) is a root with one group."""
    parsed = {}
    for root, entry in stored.items():
        listed = [RootOptions.from_dict(item) for item in entry.get("groups") or [entry]]
        parsed[root] = {options.group: options for options in listed}
    return parsed


def stored_entries(roots: Mapping[str, RootGroups]) -> dict[str, dict[str, Any]]:
    """The stored mapping (what `parse_root_options` reads): per root, its last group's options
    at the top (as older versions read them), every group under `groups`."""
    return {root: _stored_entry(groups) for root, groups in roots.items()}


def _stored_entry(groups: RootGroups) -> dict[str, Any]:
    listed = list(groups.values())
    return {**listed[-1].to_dict(), "groups": [options.to_dict() for options in listed]}


def merged_root_options(raw: str | None, roots: Sequence[Path], options: RootOptions) -> str:
    """The meta value with `roots` now read into `options.group` with `options` (their other
    groups, and the other roots, kept)."""
    stored = read_root_options(raw)
    for root in roots:
        groups = stored.setdefault(str(root), {})
        groups.pop(options.group, None)  # re-added last: the most recently ingested
        groups[options.group] = options
    return json.dumps(stored_entries(stored), sort_keys=True)


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
