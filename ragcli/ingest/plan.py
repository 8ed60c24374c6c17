"""What an ingest will read, and with which options: named roots, or the roots read before.

`plan_ingest` decides, before any model loads, which roots are read with which remembered
or given options (`ragcli.ingest.remembered`), and says in words what it is about to walk
and what changed, so a bare `rag ingest` never reads a folder differently without saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ragcli.errors import RagError
from ragcli.ingest.chunking import chunking_override
from ragcli.ingest.remembered import META_KEY, RootOptions, changes, known_roots, read_root_options
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


def remembered_options(index: Path) -> dict[str, RootOptions]:
    """Each ingested root's options as the index stores them."""
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

    A named root is read with the options given; those not given (the patterns, the group) keep
    the root's remembered values. With no paths, every root ingested before is read with its
    own remembered options, the flags given replacing them.

    A root ingested before that no longer exists is skipped with a warning and its documents
    are kept: a folder on a disk that is not mounted comes back.

    Raises:
        UsageError: no paths and none ingested before, or bad chunk settings.
        RagError: no paths, and none of the roots ingested before exists.
    """
    remembered = remembered_options(index)
    named = bool(paths)
    notices: list[str] = []
    if named:
        roots = resolve_roots(paths)
    else:
        roots = [Path(root) for root in known_roots(index)]
        gone = [root for root in roots if not root.exists()]
        roots = [root for root in roots if root not in gone]
        if not roots:
            raise RagError(
                f"none of the roots ingested before exists any more ({', '.join(map(str, gone))}): "
                "name the folders to read, or `rag rm PATH` to forget one (nothing was changed)"
            )
        notices += [
            f"warning: {root} no longer exists: skipped, its documents kept (`rag rm {root}` removes them)"
            for root in gone
        ]
    chosen: dict[Path, RootOptions] = {}
    for root in roots:
        before = remembered.get(str(root))
        base = before or RootOptions(default_group)
        root_options = RootOptions(
            options.group or base.group,
            options.include if options.filters_given else base.include,
            options.exclude if options.filters_given else base.exclude,
        )
        chosen[root] = root_options
        if before is not None and before != root_options:
            notices.append(f"{root}: {'; '.join(changes(before, root_options))}")
    if not named:
        notices[:0] = ["reading the roots ingested before:"] + [
            f"  {root} ({chosen[root].describe()})" for root in roots
        ]
    batches: dict[RootOptions, list[Path]] = {}
    for root, root_options in chosen.items():
        batches.setdefault(root_options, []).append(root)
    flags = options.chunk_flags()
    return IngestPlan(
        [
            Batch(
                batch_roots,
                root_options.group,
                chunking_override(index, root_options.group, flags),
                root_options.file_filter,
            )
            for root_options, batch_roots in batches.items()
        ],
        notices,
    )


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
