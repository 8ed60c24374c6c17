"""Each group's vector file in the index directory, kept in line with SQLite: `Store`'s vector
files (a mixin).

A file carries the generation the database recorded when it was written; a file whose
generation differs (a crash between the two writes), or that fails its checksum, is rebuilt
from the stored vectors instead of being trusted.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ragcli.errors import NotIndexed
from ragcli.store.local.vectors import FaissIndex, checksum_problem, read_params, write_streamed

if TYPE_CHECKING:  # imported where arrays are handled: opening an index needs no numpy
    import numpy as np

log = logging.getLogger(__name__)

VECTORS_DIR = "vectors"


def open_vector_file(path: Path, *, writable: bool = False) -> FaissIndex:
    """A vector file as an index; memory-mapped read-only unless `writable`. Touches no database.

    Raises:
        RuntimeError: the file does not match the checksum its params record, or FAISS
            cannot read it (callers rebuild it from the database).
    """
    problem = checksum_problem(path, read_params(path) or {})
    if problem:
        raise RuntimeError(f"damaged: {problem}")
    from ragcli.store.local.ann import load_vector_index

    return load_vector_index(path, mmap=not writable)


class VectorFiles:
    """The group vector files of an index; needs the meta, count and embedding reads of `Store`."""

    path: Path

    def vector_path(self, group: str) -> Path:
        return self.path / VECTORS_DIR / f"{group}.faiss"

    def vector_generation(self, group: str) -> int:
        return int(self.get_meta(f"vectors_generation:{group}", "0") or 0)

    def vector_index(self, group: str, *, writable: bool = False) -> FaissIndex:
        """The group's vector index, rebuilt in memory from SQLite when the file is stale,
        fails its checksum or is unreadable (the next ingest writes the rebuilt one back).

        A current file is memory-mapped read-only unless `writable` (ingest changes it).
        """
        path = self.current_vector_file(group)
        if path is not None:
            try:
                return open_vector_file(path, writable=writable)
            except RuntimeError as error:  # faiss's error for an unreadable file
                log.warning(
                    "vector file %s is unreadable (%s); rebuilding it from the database",
                    path,
                    str(error).strip().rsplit(": ", 1)[-1],
                )
        return self._build_vectors(group, FaissIndex(self.dimension()))

    def current_vector_file(self, group: str, *, exact: bool = True) -> Path | None:
        """The group's vector file when it matches the database's generation, else None.

        With `exact` (what a search needs) it must also have been written after the last
        change to the group's chunks or vectors (`chunk_version`): one written before misses
        chunks committed since, and a search rebuilds from the database instead. Without it
        (ingest patching the file by difference) the generation alone decides.
        """
        path = self.vector_path(group)
        params = read_params(path)
        if not (path.is_file() and params and params.get("generation") == self.vector_generation(group)):
            return None
        if exact and params.get("chunks_version", 0) != self.chunk_version(group):
            return None
        return path

    def dimension(self) -> int:
        value = self.get_meta("embedding_dimension")
        if value is None:
            raise NotIndexed(f"the index at {self.path} has no embeddings yet: run `rag ingest DIR`")
        return int(value)

    def sync_vectors(
        self, group: str, params: Mapping[str, Any], *, approximate_above: int | None = None
    ) -> int:
        """Bring the group's vector file in line with its chunks; returns the vector count.

        Only the difference is applied to a file that matches the database; a stale file
        is rebuilt. The file is written first and the generation committed after it.
        Past `approximate_above` vectors (default `ann.APPROXIMATE_ABOVE`) the group's
        index becomes approximate (IVF, `ragcli.store.local.ann`).

        Memory stays bounded by the index being written: a new exact file is streamed from
        SQLite, a new IVF index is trained on a sample and filled batch by batch, and an
        index about to be replaced is never read (1M vectors: no 1.5 GB flat copy first).
        """
        import numpy as np

        from ragcli.store.local import ann

        threshold = ann.APPROXIMATE_ABOVE if approximate_above is None else approximate_above
        generation = self.vector_generation(group) + 1
        params = {
            **params,
            "group": group,
            "generation": generation,
            "chunks_version": self.chunk_version(group),
            "chunks": self.chunk_count(group),
            "embedded_chunks": self.embedded_count(group),
        }
        wanted = self.group_embedding_ids(group)
        index = self._patchable_index(group, len(wanted), threshold)
        if index is None:
            dimension = self.dimension()
            path = self.vector_path(group)
            if len(wanted) <= threshold and write_streamed(
                path, dimension, self.vectors_for(wanted, dimension), len(wanted), params
            ):
                self.set_meta(f"vectors_generation:{group}", generation)
                return len(wanted)
            index = self._empty_index(wanted, dimension, threshold)
        have = index.ids()
        index.remove(np.setdiff1d(have, wanted, assume_unique=True))
        self._build_vectors(group, index, np.setdiff1d(wanted, have, assume_unique=True))
        index.save(self.vector_path(group), params)
        self.set_meta(f"vectors_generation:{group}", generation)
        return len(index)

    def _patchable_index(self, group: str, count: int, threshold: int) -> FaissIndex | None:
        """The group's vector file read for patching, or None when it must be written afresh:
        missing, stale, damaged, or of the wrong kind for `count` vectors (decided from its
        params, so an index about to be replaced is never read into memory)."""
        from ragcli.store.local import ann

        path = self.current_vector_file(group, exact=False)
        if path is None or ann.needs_new_index(read_params(path) or {}, count, threshold):
            return None
        try:
            return open_vector_file(path, writable=True)
        except RuntimeError as error:  # damaged, or faiss cannot read it
            log.warning(
                "vector file %s is unreadable (%s); rebuilding it from the database",
                path,
                str(error).strip().rsplit(": ", 1)[-1],
            )
            return None

    def _empty_index(self, wanted: np.ndarray, dimension: int, threshold: int) -> FaissIndex:
        """An empty index for the `wanted` vectors: exact up to `threshold`, else IVF trained
        on a random sample of them (read into one preallocated array)."""
        import numpy as np

        from ragcli.store.local import ann

        if len(wanted) <= threshold:
            return FaissIndex(dimension)
        size = min(len(wanted), ann.TRAIN_PER_LIST * ann.planned_lists(len(wanted)))
        sample_ids = np.sort(np.random.default_rng(0).choice(wanted, size=size, replace=False))
        sample = np.empty((size, dimension), dtype=np.float32)
        filled = 0
        for _, vectors in self.vectors_for(sample_ids, dimension):
            sample[filled : filled + len(vectors)] = vectors
            filled += len(vectors)
        return ann.IVFIndex.trained(sample[:filled], len(wanted))

    def _build_vectors(self, group: str, index: FaissIndex, ids: np.ndarray | None = None) -> FaissIndex:
        ids = self.group_embedding_ids(group) if ids is None else ids
        for batch_ids, vectors in self.vectors_for(ids, index.dimension):
            index.add(batch_ids, vectors)
        return index
