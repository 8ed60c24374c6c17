"""What an ingest will read, and with which options: named roots, or the roots read before.

`plan_ingest` decides, before any model loads, which roots are read with which remembered
or given options (`ragcli.ingest.remembered`), and says in words what it is about to walk
and what changed, so a bare `rag ingest` never reads a folder differently without saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ragcli.errors import RagError, UsageError
from ragcli.ingest.chunking import chunking_override
from ragcli.ingest.remembered import (
    META_KEY,
    RootGroups,
    RootOptions,
    changes,
    known_roots,
    read_root_options,
)
from ragcli.ingest.walk import FileFilter, resolve_roots, unmatched_patterns
from ragcli.types import ChunkSettings, IngestOptions


@dataclass
class Batch:
    """Roots read together in one pipeline run: same group, chunking and patterns."""

    roots: list[Path]
    group: str
    chunking: ChunkSettings | None
    file_filter: FileFilter


@dataclass
class IngestPlan:
    batches: list[Batch]
    notices: list[str] = field(default_factory=list)

    @property
    def roots(self) -> list[Path]:
        return [root for batch in self.batches for root in batch.roots]


def remembered_options(index: Path) -> dict[str, RootGroups]:
    """Each ingested root's options per group as the index stores them."""
    from ragcli.store.directory import read_index_meta

    return read_root_options(read_index_meta(index, META_KEY))


def plan_ingest(
    index: Path,
    paths: Sequence[str | Path] | None,
    options: IngestOptions,
    *,
    default_group: str,
) -> IngestPlan:
    """The batches to run and what to say about them.

    A root is read into every group it was read into before, each with its remembered
    patterns (a root never ingested: into `default_group`); `--group` reads it into that
    group only. Patterns given replace those of every group read. With no paths, every root
    ingested before is read so.

    A root ingested before that no longer exists is skipped with a warning and its documents
    are kept: a folder on a disk that is not mounted comes back.

    Raises:
        UsageError: no paths and none ingested before, bad chunk settings, or chunk settings
            given without `--group` for more than one group.
        RagError: no paths, and none of the roots ingested before exists.
    """
    remembered = remembered_options(index)
    roots, notices = (resolve_roots(paths), []) if paths else _existing_roots(index)
    chosen: dict[tuple[Path, str], RootOptions] = {}
    for root in roots:
        groups = remembered.get(str(root), {})
        for before, after in _read_options(groups, options, default_group):
            chosen[(root, after.group)] = after
            notices += _changes_said(root, groups, before, after)
    if not paths:
        notices[:0] = ["reading the roots ingested before:"] + [
            f"  {root} ({root_options.describe()})" for (root, _), root_options in chosen.items()
        ]
    return IngestPlan(_batches(index, chosen, options), notices)


def _existing_roots(index: Path) -> tuple[list[Path], list[str]]:
    """The roots ingested before that still exist, and a warning for each that does not."""
    roots = [Path(root) for root in known_roots(index)]
    gone = [root for root in roots if not root.exists()]
    if len(gone) == len(roots):
        raise RagError(
            f"none of the roots ingested before exists any more ({', '.join(map(str, gone))}): "
            "name the folders to read, or `rag rm PATH` to forget one (nothing was changed)"
        )
    warnings = [
        f"warning: {root} no longer exists: skipped, its documents kept (`rag rm {root}` removes them)"
        for root in gone
    ]
    return [root for root in roots if root not in gone], warnings


def _read_options(
    groups: RootGroups, options: IngestOptions, default_group: str
) -> list[tuple[RootOptions | None, RootOptions]]:
    """(remembered, to read with) for each group one root is read into this time."""
    names = [options.group] if options.group else list(groups) or [default_group]
    pairs = []
    for name in names:
        before = groups.get(name)
        base = before or RootOptions(name)  # a new group starts from the patterns given, or none
        after = RootOptions(
            name,
            options.include if options.filters_given else base.include,
            options.exclude if options.filters_given else base.exclude,
        )
        pairs.append((before, after))
    return pairs


def _changes_said(
    root: Path, groups: RootGroups, before: RootOptions | None, after: RootOptions
) -> list[str]:
    """What changes for one root and group, in words (nothing when nothing changes)."""
    if before is None:
        if not groups:
            return []
        return [f"{root}: group {after.group} added beside {', '.join(groups)} ({after.describe()})"]
    if before == after:
        return []
    label = f"{root} (group {after.group})" if len(groups) > 1 else str(root)
    return [f"{label}: {'; '.join(changes(before, after))}"]


def _batches(index: Path, chosen: dict[tuple[Path, str], RootOptions], options: IngestOptions) -> list[Batch]:
    """One batch per distinct set of options, its roots in order.

    Raises:
        UsageError: chunk settings given without `--group` while more than one group is read
            (they would re-chunk every group alike).
    """
    flags = options.chunk_flags()
    by_options: dict[RootOptions, list[Path]] = {}
    for (root, _), root_options in chosen.items():
        by_options.setdefault(root_options, []).append(root)
    groups = list(dict.fromkeys(root_options.group for root_options in by_options))
    if flags and not options.group and len(groups) > 1:
        raise UsageError(
            f"chunk settings change one group, and these roots are read into {', '.join(groups)}: "
            "name the group with --group"
        )
    return [
        Batch(roots, group.group, chunking_override(index, group.group, flags), group.file_filter)
        for group, roots in by_options.items()
    ]


def pattern_warnings(plan: IngestPlan) -> list[str]:
    """One line per include/exclude pattern that matches no file under its roots."""
    said = []
    for batch in plan.batches:
        for pattern in unmatched_patterns(batch.roots, batch.file_filter):
            said.append(
                f"warning: pattern {pattern!r} matches no file under {', '.join(map(str, batch.roots))} "
                "(patterns are gitignore-style: one with a '/' is anchored at the folder given; "
                "'**/' in front matches at any depth)"
            )
    return said
