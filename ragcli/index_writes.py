"""What an `Index` writes: ingest, embed, watch and remove (a mixin of `ragcli.index.Index`).

Each method resolves what the call reads (`ingest_plan`), loads the embedding model through
the `Index`, closes the index's readers (they would keep serving the index as it was) and
delegates to the ingest stage (`ragcli.ingest.pipeline`, `ragcli.ingest.watch`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ragcli.choices import DEFAULT_GROUP
from ragcli.errors import UsageError

if TYPE_CHECKING:
    import threading

    from ragcli.config import Settings
    from ragcli.embedding.base import Embedder
    from ragcli.ingest.embedding_pass import EmbedReport
    from ragcli.ingest.plan import IngestPlan
    from ragcli.ingest.report import IngestReport
    from ragcli.ingest.watch import WatchBatch
    from ragcli.store.removal import RemovalPlan
    from ragcli.types import IngestOptions, Progress

# A bare ingest whose roots were read with different options runs once per set of options;
# a rebuild or a watch is one run, so it needs them named.
_ONE_BATCH = (
    "these roots are read into more than one group, or with different patterns (see `rag status`), "
    "and {what} takes one set at a time: name the roots with --group and their flags"
)


class IndexWrites:
    """`Index`'s writing methods; they use its `path`, `settings`, `embedder()` and `close()`."""

    path: Path
    settings: Settings
    _embedder: Embedder | None

    def ingest(
        self,
        paths: Sequence[str | Path] | None = None,
        options: IngestOptions | None = None,
        *,
        prune: bool = True,
        rebuild: bool = False,
        batch_chunks: int = 256,
        progress: "Progress | None" = None,
        lock_timeout: float | None = None,
        on_wait: Callable[[str], None] | None = None,
        store: str | None = None,
        defer_embedding: bool = False,
        plan: IngestPlan | None = None,
    ) -> "IngestReport":
        """Read files and folders into the index (`ingest`); unchanged files are skipped.

        Naming a path that `remove` excluded adds it back.

        Args:
            paths: folders (walked) and files; None for the roots ingested before, each read
                with the options it was last ingested with (`ragcli.ingest.remembered`).
            options: what to read and how to cut it (`ragcli.types.IngestOptions`): the chunk
                group to fill (default: the root's remembered group, else the `group`
                setting, else "medium"), its chunking overridden, include/exclude patterns
                replacing the roots' remembered ones; None: all as remembered or set.
            prune: remove indexed documents whose files are gone from the given folders.
            rebuild: build a fresh index (e.g. for another embedding model) and swap it in.
            batch_chunks: chunks embedded and committed per transaction.
            progress: receives `start(total)` and `advance(path, status)`.
            lock_timeout: seconds to wait for another process writing the index (default: 600).
            on_wait: told once (one line) when this call has to wait for that process.
            store: where a new index keeps its content ("local", a Milvus Lite ``*.db`` file or
                a Milvus URL); recorded in the index, so later calls need not repeat it.
            defer_embedding: return once the text is indexed (BM25 finds it); `embed` adds
                the vectors later.
            plan: what `ingest_plan` returned for these same paths and options (a caller that
                showed it first): used as it is, not worked out again.

        Raises:
            IndexMismatch, IndexBusy, UsageError, StoreUnavailable: see `ragcli.ingest.pipeline.ingest`.
        """
        from ragcli.ingest.pipeline import ingest
        from ragcli.ingest.report import merge_reports

        plan = plan or self.ingest_plan(paths, options)
        if rebuild and len(plan.batches) > 1:
            raise UsageError(_ONE_BATCH.format(what="--rebuild"))
        self._lift_exclusions(paths)
        embedder = self.embedder(fresh=rebuild)
        self.close()  # open readers would keep serving the index as it was
        lock = {} if lock_timeout is None else {"lock_timeout": lock_timeout}
        reports = [
            ingest(
                self.path,
                batch.roots,
                embedder=embedder,
                group=batch.group,
                chunking=batch.chunking,
                file_filter=batch.file_filter,
                prune=prune,
                rebuild=rebuild,
                batch_chunks=batch_chunks,
                progress=progress,
                on_wait=on_wait,
                store=store,
                defer_embedding=defer_embedding,
                **lock,
            )
            for batch in plan.batches
        ]
        self._embedder = embedder
        return merge_reports(reports)

    def embed(
        self,
        *,
        progress: Any = None,
        lock_timeout: float | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> "EmbedReport":
        """Embed the chunks an ingest left without a vector (`ragcli.ingest.pipeline.embed_index`).

        Raises:
            NotIndexed, IndexMismatch, IndexBusy: see `embed_index`.
        """
        from ragcli.ingest.pipeline import embed_index

        embedder = self.embedder()
        self.close()
        lock = {} if lock_timeout is None else {"lock_timeout": lock_timeout}
        return embed_index(self.path, embedder=embedder, progress=progress, on_wait=on_wait, **lock)

    def embed_in_background(self, lock_timeout: float | None = None) -> dict[str, Any]:
        """Start `rag embed` detached for this index; its pid and log (`rag status` shows them).

        Raises:
            NotIndexed: there is no index.
        """
        from ragcli.ingest.background import start_background_embedding
        from ragcli.store.directory import IndexDirectory

        IndexDirectory.open(self.path).close()
        options = [] if lock_timeout is None else ["--lock-timeout", str(lock_timeout)]
        if self.settings.embed_model:
            options += ["--embed-model", str(self.settings.embed_model)]
        return start_background_embedding(self.path, options)

    def watch(
        self,
        paths: Sequence[str | Path] | None = None,
        options: IngestOptions | None = None,
        *,
        stop: threading.Event,
        batch_chunks: int = 256,
        plan: IngestPlan | None = None,
    ) -> Iterator["WatchBatch"]:
        """`ingest`, then every change under the folders as it happens (`ragcli.ingest.watch.watch`).

        Args:
            stop: a `threading.Event`; once set, the batch being applied commits and the
                iteration ends after a last catch-up.
            the others: as `ingest`.

        Yields:
            One batch per set of changes (the first, `kind == "initial"`, carries the report).
        """
        from ragcli.ingest.watch import watch

        plan = plan or self.ingest_plan(paths, options)
        if len(plan.batches) > 1:
            raise UsageError(_ONE_BATCH.format(what="--watch"))
        batch = plan.batches[0]
        self._lift_exclusions(paths)
        embedder = self.embedder()
        self.close()
        yield from watch(
            self.path,
            batch.roots,
            stop=stop,
            embedder=embedder,
            group=batch.group,
            chunking=batch.chunking,
            file_filter=batch.file_filter,
            batch_chunks=batch_chunks,
        )

    def _lift_exclusions(self, paths: Sequence[str | Path] | None) -> None:
        if paths:  # naming a path that `remove` excluded adds it back
            from ragcli.store.removal import lift_exclusions

            lift_exclusions(self.path, [Path(path) for path in paths])

    def ingest_roots(self, paths: Sequence[str | Path] | None = None) -> list[Path]:
        """The folders and files an ingest of `paths` reads: those, else the roots ingested before."""
        from ragcli.ingest.remembered import known_roots

        return [Path(path) for path in paths] if paths else list(known_roots(self.path))

    def ingest_plan(
        self,
        paths: Sequence[str | Path] | None = None,
        options: IngestOptions | None = None,
    ) -> "IngestPlan":
        """What an `ingest` with these arguments reads and how, checked; nothing changes.

        A caller about to load the embedding model first (e.g. behind a spinner) calls this to
        fail fast on a usage error, and to say what is about to be walked (`plan.notices`).

        Raises:
            UsageError: no paths and none ingested before, a path missing, bad chunk settings.
        """
        from ragcli.ingest.plan import plan_ingest
        from ragcli.ingest.walk import refuse_index_in_roots
        from ragcli.types import IngestOptions

        default_group = self.settings.get("group") or DEFAULT_GROUP
        plan = plan_ingest(self.path, paths, options or IngestOptions(), default_group=default_group)
        refuse_index_in_roots(self.path, plan.roots)
        return plan

    def plan_removal(self, paths: Sequence[str | Path]) -> "RemovalPlan":
        """Which indexed documents a `remove(paths)` would remove, out of how many (nothing changes)."""
        from ragcli.store.removal import plan_removal

        return plan_removal(self.path, [str(path) for path in paths])

    def remove(
        self,
        paths: Sequence[str | Path],
        *,
        lock_timeout: float | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> int:
        """Remove documents (a folder: everything under it); returns how many.

        The removal lasts: later ingests skip the removed paths until one is named again.

        Raises:
            IndexBusy: another process kept the index locked for longer than `lock_timeout`.
        """
        from ragcli.ingest.pipeline import remove_paths
        from ragcli.store.removal import record_exclusions

        targets = self.plan_removal(paths).targets
        self.close()
        lock = {} if lock_timeout is None else {"lock_timeout": lock_timeout}
        removed = remove_paths(self.path, [str(path) for path in paths], on_wait=on_wait, **lock)
        record_exclusions(self.path, targets)
        return removed
