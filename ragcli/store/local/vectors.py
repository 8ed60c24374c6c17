"""Vector files: a FAISS index plus a small JSON params file, written atomically.

FAISS specifics stay in this module; retrieval and ingest only see `VectorIndex`
(add, remove, search with an allow-list, ids, len), so another engine can replace it.
Vectors are L2-normalised, so inner product is cosine similarity.
"""

from __future__ import annotations

import json
import mmap
import os
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol

if TYPE_CHECKING:
    import faiss

if TYPE_CHECKING:  # imported where arrays are handled: opening an index needs no numpy
    import numpy as np

FORMAT_VERSION = 1
_CRC_WINDOW = 1 << 26  # 64 MiB, a multiple of mmap.ALLOCATIONGRANULARITY


class VectorIndex(Protocol):
    """What the rest of ragcli needs from a vector engine."""

    dimension: int

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None: ...

    def remove(self, ids: Iterable[int]) -> None: ...

    def search(
        self, queries: np.ndarray, k: int, allowed_ids: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def ids(self) -> np.ndarray: ...

    def __len__(self) -> int: ...

    def describe(self) -> Mapping[str, Any]: ...


class FaissIndex:
    """Exact inner-product search over an id-mapped flat FAISS index."""

    def __init__(self, dimension: int, index: faiss.Index | None = None) -> None:
        import faiss

        self.dimension = dimension
        self._index = index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors under the given int64 ids."""
        import numpy as np

        if len(ids):
            self._index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
            )

    def remove(self, ids: Iterable[int]) -> None:
        """Remove vectors by id; unknown ids are ignored."""
        import numpy as np

        array = np.fromiter(ids, dtype=np.int64)
        if len(array):
            self._index.remove_ids(array)

    def search(self, queries: np.ndarray, k: int, allowed_ids: np.ndarray | None = None):
        """Return (scores, ids) of the k nearest vectors per query; ids are -1 past the end."""
        import faiss
        import numpy as np

        params = None
        if allowed_ids is not None:
            params = faiss.SearchParameters(
                sel=faiss.IDSelectorBatch(np.asarray(allowed_ids, dtype=np.int64))
            )
        return self._search(queries, k, params)

    def _search(self, queries: np.ndarray, k: int, params: Any):
        """FAISS search of up to `k` neighbours per query with these search parameters.

        One query: OpenMP threads cost more than they save (8.8 ms vs 18.6 ms over 100K
        vectors on 2 cores), so it runs on one thread and the setting is restored after.
        """
        import faiss
        import numpy as np

        k = max(1, min(k, len(self)))
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if len(queries) > 1:
            return self._index.search(queries, k, params=params)
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            return self._index.search(queries, k, params=params)
        finally:
            faiss.omp_set_num_threads(threads)

    def ids(self) -> np.ndarray:
        import faiss
        import numpy as np

        return faiss.vector_to_array(self._index.id_map).astype(np.int64)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def describe(self) -> Mapping[str, Any]:
        """What kind of index this is, for the params file (`ragcli.store.local.ann` adds IVF)."""
        return {"index_type": "flat"}

    def save(self, path: Path, params: Mapping[str, Any]) -> None:
        """Write the index and its params beside it, each through a temp file and os.replace.

        The params file is written last and names the generation; a reader that finds the
        generation differing from the database's rebuilds instead of trusting the file.
        """
        import faiss

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        faiss.write_index(self._index, str(tmp))
        size, crc = file_checksum(tmp)
        _fsync_replace(tmp, path)
        meta = {
            "format_version": FORMAT_VERSION,
            "dimension": self.dimension,
            "count": len(self),
            "metric": "inner_product",
            "normalized": True,
            **params,
            "bytes": size,
            "checksum": f"crc32:{crc:08x}",
        }
        meta.update(self.describe())
        write_json_atomic(params_path(path), meta)

    @classmethod
    def load(cls, path: Path, *, mmap: bool = False) -> "FaissIndex":
        """Read an index; `mmap` maps the file read-only (3x faster to open, for searching only).

        `ragcli.store.local.ann.load_vector_index` wraps an approximate (IVF) file in its own class.
        """
        import faiss

        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP if mmap else 0)
        return cls(index.d, index)


def write_streamed(
    path: Path, dimension: int, batches: Iterable[tuple[Any, Any]], count: int, params: Mapping[str, Any]
) -> bool:
    """Write a vector file from (ids, vectors) batches without holding them all in memory.

    The file is byte for byte what `faiss.write_index` writes for an `IndexIDMap2(IndexFlatIP)`
    (a header, the float array, the id array; a test compares the two), so the in-memory
    index of a 100 MB document's 150K vectors (230 MB) is never built just to be written.
    Returns False, writing nothing, when the FAISS build lays the header out differently.
    """
    import struct

    import faiss
    import numpy as np

    empty = faiss.serialize_index(faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))).tobytes()
    if len(empty) != 90 or empty[:4] != b"IxM2" or empty[37:41] != b"IxFI":
        return False
    header = bytearray(empty[:74])
    struct.pack_into("<q", header, 8, count)
    struct.pack_into("<q", header, 45, count)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    ids: list[Any] = []
    written = 0
    with open(tmp, "wb") as handle:
        handle.write(header)
        handle.write(struct.pack("<q", count * dimension))
        for batch_ids, vectors in batches:
            handle.write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
            ids.append(np.asarray(batch_ids, dtype="<i8"))
            written += len(batch_ids)
        handle.write(struct.pack("<q", count))
        for part in ids:
            handle.write(part.tobytes())
    if written != count:
        tmp.unlink()
        raise RuntimeError(f"vector file for {count} vectors got {written}")
    size, crc = file_checksum(tmp)
    _fsync_replace(tmp, path)
    meta = {
        "format_version": FORMAT_VERSION,
        "dimension": dimension,
        "count": count,
        "metric": "inner_product",
        "normalized": True,
        **params,
        "bytes": size,
        "checksum": f"crc32:{crc:08x}",
        "index_type": "flat",
    }  # what FaissIndex.describe() says
    write_json_atomic(params_path(path), meta)
    return True


def file_checksum(path: Path) -> tuple[int, int]:
    """(size, zlib.crc32) of a file, read through a memory map in windows of `_CRC_WINDOW`.

    CRC-32 catches random bytes written over the payload (which FAISS would load and score
    as 1e37) and runs at several GB/s: 0.02 s for a 100K-vector (154 MB) file here, so every
    open verifies it. sha256 took 0.08 s, blake2b 0.11 s for the same file. Mapping one
    window at a time keeps the mapped pages (which count in the process's RSS) bounded:
    the whole of a 1M-vector file would add 780 MB on top of the index just written.
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        crc = 0
        for offset in range(0, size, _CRC_WINDOW):
            length = min(_CRC_WINDOW, size - offset)
            with mmap.mmap(handle.fileno(), length, offset=offset, access=mmap.ACCESS_READ) as view:
                crc = zlib.crc32(view, crc)
        return size, crc


def checksum_problem(path: Path, params: Mapping[str, Any]) -> str | None:
    """Why the vector file does not match the checksum its params record, or None when it does.

    Files written before checksums existed (no "checksum" key) are accepted; the next
    ingest rewrites them with one.
    """
    expected = params.get("checksum")
    if not expected:
        return None
    try:
        size, crc = file_checksum(path)
    except OSError as error:
        return f"cannot read it ({error.strerror or error})"
    if params.get("bytes") not in (None, size):
        return f"its size is {size} bytes, {params.get('bytes')} were written"
    if expected != f"crc32:{crc:08x}":
        return f"its checksum is crc32:{crc:08x}, {expected} was written"
    return None


def params_path(index_path: Path) -> Path:
    return index_path.with_suffix(".json")


def read_params(index_path: Path) -> dict[str, Any] | None:
    """The params of a vector file, or None when absent or unreadable."""
    try:
        return json.loads(params_path(index_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    _fsync_replace(tmp, path)


def _fsync_replace(tmp: Path, final: Path) -> None:
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, final)
