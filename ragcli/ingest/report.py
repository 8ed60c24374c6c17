"""What one ingest did: the `IngestReport` every ingest, watcher and `rag rm` fills."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence


@dataclass(frozen=True)
class Failure:
    path: str
    reason: str


@dataclass
class IngestReport:
    """What one ingest did."""

    index: str
    group: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0
    failed: list[Failure] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    vectors: int = 0
    seconds: float = 0.0
    # Indexed documents the walk left out (--include/--exclude) whose files still exist: kept,
    # never pruned; the CLI says so. Not part of the JSON report.
    left_out: list[str] = field(default_factory=list, repr=False)
    # Files under the folders read that `rag rm` removed earlier, so still left out (naming one
    # adds it back); the CLI says so. Not part of the JSON report.
    removed_earlier: list[str] = field(default_factory=list, repr=False)
    # Documents removed because their files are gone, by path: `rag ingest --watch` says each
    # one, as it says each file added. Not part of the JSON report.
    pruned: list[str] = field(default_factory=list, repr=False)
    # Chunks were written without their vectors, left for `rag embed` (a deferred run on a store
    # that can hold them so; Milvus cannot, so a deferred run there embeds as usual). Not in JSON.
    vectors_deferred: bool = field(default=False, repr=False)

    def to_dict(self) -> dict:
        data = asdict(self)
        del data["left_out"], data["removed_earlier"], data["pruned"], data["vectors_deferred"]
        return data


def merge_reports(reports: Sequence[IngestReport]) -> IngestReport:
    """One report for the runs of one ingest (a bare ingest runs once per set of root options).

    Counts are summed over the runs, so a file read into two groups counts in each. A run's
    `vectors` is its group's total after it, so the merged figure adds the last run of each
    group (two runs can fill one group: roots with different patterns).
    """
    if len(reports) == 1:
        return reports[0]
    merged = IngestReport(index=reports[0].index, group=", ".join(dict.fromkeys(r.group for r in reports)))
    group_vectors: dict[str, int] = {}
    for report in reports:
        for name in ("added", "updated", "unchanged", "removed", "skipped", "chunks", "embedded", "reused"):
            setattr(merged, name, getattr(merged, name) + getattr(report, name))
        merged.failed.extend(report.failed)
        merged.removed_earlier = sorted({*merged.removed_earlier, *report.removed_earlier})
        merged.vectors_deferred = merged.vectors_deferred or report.vectors_deferred
        group_vectors[report.group] = report.vectors
        merged.seconds = round(merged.seconds + report.seconds, 3)
    merged.vectors = sum(group_vectors.values())
    return merged
