"""The embeddings table and the chunks' links to it: `Store`'s vector rows (a mixin).

Every vector is stored once per distinct chunk text (by hash) in SQLite, the source of truth
the vector files (`ragcli.store.local.vector_files`) are built from.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

if TYPE_CHECKING:  # imported where arrays are handled: opening an index needs no numpy
    import numpy as np

ID_BATCH = 500  # ids per `IN (...)` list


class EmbeddingRows:
    """Reads and writes of the embeddings table; needs `db` and `count` (see `Store`)."""

    db: sqlite3.Connection
    _touched: set[str]

    def embedding_ids(self, hashes: Iterable[str]) -> dict[str, int]:
        """Ids of already-stored embeddings by chunk hash."""
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), ID_BATCH):
            part = unique[start : start + ID_BATCH]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(f"SELECT hash, id FROM embeddings WHERE hash IN ({marks})", part)
            found.update(dict(rows.fetchall()))
        return found

    def insert_embeddings(self, hashes: Sequence[str], vectors: np.ndarray) -> dict[str, int]:
        """Store vectors by chunk hash (caller holds the transaction); returns their ids."""
        import numpy as np

        ids = {}
        for chunk_hash, vector in zip(hashes, np.asarray(vectors, dtype=np.float32)):
            ids[chunk_hash] = self.db.execute(
                "INSERT INTO embeddings (hash, vector) VALUES (?, ?)", [chunk_hash, vector.tobytes()]
            ).lastrowid
        return ids

    def pending_embeddings(self, group: str, limit: int, after: int = 0) -> tuple[dict[str, str], int, int]:
        """The group's next chunks without a vector, in id order (committed first, embedded
        first): up to `limit` chunks past id `after`, as (distinct texts by hash, chunks, last id)."""
        rows = self.db.execute(
            "SELECT id, hash, text FROM chunks WHERE group_name = ? AND embedding_id IS NULL AND id > ? "
            "ORDER BY id LIMIT ?",
            [group, after, limit],
        ).fetchall()
        return {row[1]: row[2] for row in rows}, len(rows), (rows[-1][0] if rows else after)

    def attach_embeddings(self, group: str, after: int, last: int) -> int:
        """Point the group's chunks without a vector whose ids lie in (`after`, `last`] at the
        stored embeddings of their texts (caller holds the transaction; the id range walks
        the primary key, the hash the embeddings' unique index); returns how many got one."""
        count = self.db.execute(
            "UPDATE chunks SET embedding_id = (SELECT e.id FROM embeddings e WHERE e.hash = chunks.hash) "
            "WHERE id > ? AND id <= ? AND group_name = ? AND embedding_id IS NULL",
            [after, last, group],
        ).rowcount
        if count:
            self._touched.add(group)
        return count

    def without_vectors(self, chunk_ids: Sequence[int]) -> set[int]:
        """Which of these chunks have no vector yet."""
        found: set[int] = set()
        for start in range(0, len(chunk_ids), ID_BATCH):
            part = [int(i) for i in chunk_ids[start : start + ID_BATCH]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT id FROM chunks WHERE id IN ({marks}) AND embedding_id IS NULL", part
            )
            found.update(row[0] for row in rows)
        return found

    def embedded_count(self, group: str) -> int:
        """How many of the group's chunks have a vector."""
        return self.count("chunks", "group_name = ? AND embedding_id IS NOT NULL", [group])

    def delete_unused_embeddings(self) -> int:
        return self.db.execute(
            "DELETE FROM embeddings WHERE id NOT IN (SELECT embedding_id FROM chunks "
            "WHERE embedding_id IS NOT NULL)"
        ).rowcount

    def group_embedding_ids(self, group: str) -> np.ndarray:
        import numpy as np

        rows = self.db.execute(
            "SELECT DISTINCT embedding_id FROM chunks WHERE group_name = ? AND embedding_id IS NOT NULL",
            [group],
        )
        return np.fromiter((row[0] for row in rows), dtype=np.int64)

    def vectors_for(self, ids: np.ndarray, dimension: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (ids, vectors) batches for the given embedding ids."""
        import numpy as np

        for start in range(0, len(ids), ID_BATCH):
            part = [int(i) for i in ids[start : start + ID_BATCH]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT id, vector FROM embeddings WHERE id IN ({marks})", part
            ).fetchall()
            if rows:
                yield (
                    np.array([r[0] for r in rows], dtype=np.int64),
                    np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, dimension),
                )

    def chunk_ids_for_embeddings(self, group: str, embedding_ids: Sequence[int]) -> dict[int, list[int]]:
        """Map embedding ids to the ids of the group's chunks that use them."""
        found: dict[int, list[int]] = {}
        for start in range(0, len(embedding_ids), ID_BATCH):
            part = [int(i) for i in embedding_ids[start : start + ID_BATCH]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT embedding_id, id FROM chunks WHERE group_name = ? AND embedding_id IN ({marks}) "
                "ORDER BY id",
                [group, *part],
            )
            for embedding_id, chunk_id in rows.fetchall():
                found.setdefault(embedding_id, []).append(chunk_id)
        return found

    def chunk_vectors(self, chunk_ids: Sequence[int], dimension: int) -> np.ndarray:
        """The stored embedding vectors of these chunks (those that have one), one per row."""
        import numpy as np

        if not chunk_ids:
            return np.zeros((0, dimension), dtype=np.float32)
        marks = ",".join("?" * len(chunk_ids))
        rows = self.db.execute(
            "SELECT e.vector FROM chunks c JOIN embeddings e ON e.id = c.embedding_id "
            f"WHERE c.id IN ({marks})",
            [int(i) for i in chunk_ids],
        ).fetchall()
        return np.frombuffer(b"".join(row[0] for row in rows), dtype=np.float32).reshape(-1, dimension)

    def filtered_embedding_ids(self, group: str, where: str, params: Sequence[Any]) -> dict[int, int]:
        """Chunk id -> embedding id of the group's embedded chunks whose documents pass `where`.

        Args:
            where: a condition over `documents d` (`ragcli.store.filters.filters_sql`).
        """
        rows = self.db.execute(
            "SELECT c.id, c.embedding_id FROM chunks c JOIN documents d ON d.id = c.doc_id "
            f"WHERE c.group_name = ? AND c.embedding_id IS NOT NULL AND ({where})",
            [group, *params],
        )
        return dict(rows.fetchall())
