"""The on-disk index: one directory holding a SQLite database and per-group vector files.

SQLite is the source of truth (documents, chunks with their BM25 terms, the BM25 postings
of `ragcli.store.local.postings`, and every embedding vector); the FAISS files are derived from
it and carry a generation number.
When a vector file's generation differs from the database's (a crash between the two
writes), it is rebuilt from the stored vectors instead of being trusted.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from ragcli.errors import IndexBusy, IndexCorrupt, NotIndexed, RagError, UnknownGroup, UsageError
from ragcli.locking import exclusive
from ragcli.store.ownership import NotAnIndex, check_format, claim_index_dir, newer_format_message
from ragcli.store.local.postings import PostingsWriter
from ragcli.store.local.schema import MIGRATION_NAMES
from ragcli.store.local.vectors import FaissIndex, checksum_problem, read_params, write_streamed
from ragcli.types import Chunk, ChunkSettings

if TYPE_CHECKING:  # imported where arrays are handled: opening an index needs no numpy
    import numpy as np

log = logging.getLogger(__name__)

DATABASE_NAME = "index.db"
MIGRATION_LOCK = "migrate.lock"
VECTORS_DIR = "vectors"
GROUP_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")
_BATCH = 500


@dataclass(frozen=True)
class NewChunk:
    """A chunk about to be stored: its window, hash, BM25 tokens and embedding id."""

    order: int
    text: str
    start: int
    end: int
    page: int | None
    hash: str
    tokens: str
    embedding_id: int | None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _chunk_metadata(row: Sequence[Any]) -> dict[str, Any]:
    """A chunk's filterable metadata: the document's columns plus its free-form metadata."""
    meta = json.loads(row[9] or "{}")
    columns = ("file_name", "file_type", "size", "modified", "created", "title")
    meta.update({key: value for key, value in zip(columns, row[10:16]) if value is not None})
    return meta


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


def read_index_meta(index: Path, key: str) -> str | None:
    """One meta value of the index at `index`; None when there is no index or no such value."""
    if not (index / DATABASE_NAME).is_file():
        return None
    store = Store.open(index)
    try:
        return store.get_meta(key)
    finally:
        store.close()


class IndexTooNew(Exception):
    """Internal: the database holds migrations this rag does not know."""


def _writable(index: Path) -> bool:
    """Whether rag can write the index folder and its database (a read-only mount, a folder
    without write permission, a database file without it: all read as not writable)."""
    database = index / DATABASE_NAME
    return os.access(index, os.W_OK) and (not database.exists() or os.access(database, os.W_OK))


def read_only_message(index: Path, detail: str) -> str:
    return (
        f"the index at {index} is read-only ({detail}): rag writes to the index folder even to "
        f"answer a query (its lock and journal files); make it writable (chmod -R u+w {index}) "
        "or copy the folder somewhere writable and pass --index there; the index itself is fine"
    )


def _pending_migrations(conn: sqlite3.Connection) -> bool:
    try:
        applied = {
            row[0]
            for row in conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = 'ragcli'")
        }
    except sqlite3.OperationalError:  # a new database: no migrations table yet
        return True
    unknown = sorted(applied - set(MIGRATION_NAMES))
    if unknown:  # migrated by a newer rag: its tables may mean what this one cannot know
        raise IndexTooNew(f"schema {unknown[-1]}")
    return not set(MIGRATION_NAMES) <= applied


def _apply_migrations(conn: sqlite3.Connection) -> None:
    with _without_pandas():
        import sqlite_utils

    from ragcli.store.local.migrations import migrations

    migrations.apply(sqlite_utils.Database(conn))


@contextmanager
def _without_pandas() -> Iterator[None]:
    """Import sqlite-utils without the pandas it loads when present (0.38 s of CPU, every new
    index): it only adds pandas' Timestamp to its column types, which ragcli never passes.
    A `None` in `sys.modules` makes that optional import fail; pandas stays importable after."""
    import sys

    if "pandas" in sys.modules or "sqlite_utils" in sys.modules:
        yield
        return
    sys.modules["pandas"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("pandas", 0) is None:
            del sys.modules["pandas"]


class Store:
    """An index directory. Open it with `Store.open` (must exist) or `Store.create`."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self.db = db
        self._postings = PostingsWriter(db)
        self._touched: set[str] = set()  # groups whose chunks this transaction changed

    @classmethod
    def open(cls, path: Path) -> "Store":
        """Open an existing index.

        Raises:
            NotIndexed: there is no index at `path`.
        """
        if path.exists() and not path.is_dir():
            raise NotIndexed(f"--index {path} is a file, not an index folder: pass the index's folder")
        if not (path / DATABASE_NAME).is_file():
            raise NotIndexed(f"no index at {path}: run `rag ingest DIR` first (or pass --index PATH)")
        return cls._connect(path)

    @classmethod
    def create(cls, path: Path) -> "Store":
        """Open an index, creating the directory (with its marker) and schema when missing.

        Raises:
            NotAnIndex: `path` is a file, or a non-empty folder that is not a ragcli index.
        """
        claim_index_dir(path)
        return cls._connect(path)

    @classmethod
    def _connect(cls, path: Path) -> "Store":
        check_format(path)
        # A plain sqlite3 connection: sqlite-utils (which imports pandas when present, ~0.5 s)
        # is loaded only when a migration is pending, keeping cold queries fast.
        try:
            conn = sqlite3.connect(
                str(path / DATABASE_NAME), timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            if _pending_migrations(conn):
                # Several processes may open an index right after an upgrade: one migrates,
                # the others wait and then find nothing left to do.
                with exclusive(path / MIGRATION_LOCK):
                    if _pending_migrations(conn):
                        _apply_migrations(conn)
        except IndexTooNew as error:
            conn.close()
            raise NotAnIndex(newer_format_message(path, error)) from None
        except sqlite3.DatabaseError as error:
            busy = "locked" in str(error) or "busy" in str(error)
            if isinstance(error, sqlite3.OperationalError) and busy:
                raise IndexBusy(
                    f"{path / DATABASE_NAME} is busy (another rag process is writing to it): "
                    "try again when it is done"
                ) from error
            if not _writable(path):
                raise RagError(read_only_message(path, str(error))) from error
            raise IndexCorrupt(
                f"{path / DATABASE_NAME} cannot be opened ({error}): move it away and run `rag ingest` again"
            ) from error
        return cls(path, conn)

    def close(self) -> None:
        self.db.close()

    def check_integrity(self) -> None:
        """Run SQLite's `PRAGMA quick_check` (reads every page once, skips index cross-checks).

        Raises:
            IndexCorrupt: a page is damaged; the message says how to recover.
        """
        from ragcli.store.errors import corrupt_message

        try:
            problems = [row[0] for row in self.db.execute("PRAGMA quick_check(3)").fetchall()]
        except sqlite3.DatabaseError as error:
            raise IndexCorrupt(corrupt_message(self.path, str(error))) from error
        if problems != ["ok"]:
            raise IndexCorrupt(corrupt_message(self.path, "quick_check: " + "; ".join(problems)[:200]))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; rolled back on any exception.

        The BM25 postings of the chunks it added are written as one segment just before
        the commit, so they land (or vanish) with the chunks.
        """
        conn = self.db
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._postings.flush()
            self._bump_chunk_versions()
            conn.execute("COMMIT")
        except BaseException:
            self._postings.discard()
            self._touched.clear()
            if conn.in_transaction:  # a failed COMMIT (disk full) must not leave it open
                conn.execute("ROLLBACK")
            raise

    def _bump_chunk_versions(self) -> None:
        """Count each change to a group's chunks or their vectors (`chunk_version`), so a
        vector file written before it is known to be behind, not taken as current."""
        for group in sorted(self._touched):
            self.set_meta(f"chunks_version:{group}", self.chunk_version(group) + 1)
        self._touched.clear()

    def chunk_version(self, group: str) -> int:
        """How many committed transactions changed the group's chunks or their vectors."""
        return int(self.get_meta(f"chunks_version:{group}", "0") or 0)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads in the block see one committed state, even while an ingest commits (WAL)."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def version(self) -> tuple[int, int, int]:
        """Changes whenever the database does: by another connection's commit (SQLite's
        `data_version`) or this connection's own writes (`total_changes`)."""
        db = self.db
        return id(db), db.execute("PRAGMA data_version").fetchone()[0], db.total_changes

    # -- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, str(value)])

    # -- groups -------------------------------------------------------------------------
    def groups(self) -> dict[str, ChunkSettings]:
        rows = self.db.execute("SELECT name, split_by, chunk_size, chunk_overlap FROM groups ORDER BY name")
        return {name: ChunkSettings(by, size, overlap) for name, by, size, overlap in rows.fetchall()}

    def group(self, name: str) -> ChunkSettings:
        """Settings of one group.

        Raises:
            UnknownGroup: the index has no such group; the message lists the ones it has.
        """
        groups = self.groups()
        if name not in groups:
            known = ", ".join(groups) or "none yet"
            raise UnknownGroup(f"unknown group '{name}' (this index has: {known})")
        return groups[name]

    def ensure_group(self, name: str, settings: ChunkSettings) -> bool:
        """Create or update a group; True when its chunking settings changed."""
        if not GROUP_NAME.match(name):
            raise UsageError(f"--group '{name}': use letters, digits and _ (starting with a letter)")
        old = self.groups().get(name)
        if old == settings:
            return False
        self.db.execute(
            "INSERT OR REPLACE INTO groups (name, split_by, chunk_size, chunk_overlap, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [name, settings.split_by, settings.chunk_size, settings.chunk_overlap, now_iso()],
        )
        return old is not None

    # -- documents ----------------------------------------------------------------------
    def document_by_path(self, path: str) -> dict[str, Any] | None:
        rows = self._dicts("SELECT * FROM documents WHERE path = ?", [path])
        return rows[0] if rows else None

    def _dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def chunked_hash(self, doc_id: int, group: str) -> str | None:
        """The content hash the group's chunks of a document were made from."""
        row = self.db.execute(
            "SELECT content_hash FROM doc_groups WHERE doc_id = ? AND group_name = ?", [doc_id, group]
        ).fetchone()
        return row[0] if row else None

    def upsert_document(self, record: Mapping[str, Any]) -> int:
        """Insert or update a document row by path; returns its id."""
        values = dict(record)
        values["metadata"] = json.dumps(values.get("metadata") or {}, ensure_ascii=False, default=str)
        values["ingested_at"] = now_iso()
        existing = self.document_by_path(values["path"])
        columns = list(values)
        if existing:
            assignments = ", ".join(f"{column} = ?" for column in columns)
            self.db.execute(
                f"UPDATE documents SET {assignments} WHERE id = ?", [*values.values(), existing["id"]]
            )
            return int(existing["id"])
        marks = ", ".join("?" * len(columns))
        cursor = self.db.execute(
            f"INSERT INTO documents ({', '.join(columns)}) VALUES ({marks})", list(values.values())
        )
        return int(cursor.lastrowid)

    def replace_chunks(self, doc_id: int, group: str, content_hash: str, chunks: Sequence[NewChunk]) -> None:
        """Replace a document's chunks in one group (caller holds the transaction)."""
        self.clear_chunks(doc_id, group)
        self.add_chunks(doc_id, group, chunks)
        self.mark_chunked(doc_id, group, content_hash)

    def clear_chunks(self, doc_id: int, group: str) -> None:
        """Drop a document's chunks in a group and its "chunked" mark (caller holds the transaction).

        A document written over several transactions (a big file) stays unmarked until its
        last chunk is in, so an interrupted one is re-chunked by the next ingest.
        """
        self._delete_chunks("doc_id = ? AND group_name = ?", [doc_id, group])
        self.db.execute("DELETE FROM doc_groups WHERE doc_id = ? AND group_name = ?", [doc_id, group])

    def add_chunks(self, doc_id: int, group: str, chunks: Sequence[NewChunk]) -> None:
        """Append chunks to a document's group (caller holds the transaction)."""
        for chunk in chunks:
            chunk_id = self.db.execute(
                'INSERT INTO chunks (doc_id, group_name, ord, text, start, "end", page, hash, embedding_id, '
                "tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    doc_id,
                    group,
                    chunk.order,
                    chunk.text,
                    chunk.start,
                    chunk.end,
                    chunk.page,
                    chunk.hash,
                    chunk.embedding_id,
                    chunk.tokens,
                ],
            ).lastrowid
            self._postings.add(group, chunk_id, chunk.tokens.split())
        if chunks:
            self._touched.add(group)

    def mark_chunked(self, doc_id: int, group: str, content_hash: str) -> None:
        """Record that the group's chunks of a document are complete for this content."""
        self.db.execute(
            "INSERT OR REPLACE INTO doc_groups (doc_id, group_name, content_hash) VALUES (?, ?, ?)",
            [doc_id, group, content_hash],
        )

    def delete_documents(self, doc_ids: Iterable[int]) -> int:
        """Delete documents with all their chunks (caller holds the transaction)."""
        count = 0
        for doc_id in doc_ids:
            self._delete_chunks("doc_id = ?", [doc_id])
            self.db.execute("DELETE FROM doc_groups WHERE doc_id = ?", [doc_id])
            count += self.db.execute("DELETE FROM documents WHERE id = ?", [doc_id]).rowcount
        return count

    def _delete_chunks(self, where: str, params: list[Any]) -> None:
        rows = self.db.execute(f"SELECT id, group_name FROM chunks WHERE {where}", params).fetchall()
        ids = [row[0] for row in rows]
        self._touched.update(row[1] for row in rows)
        if ids:
            self._postings.remove(ids)
            self.db.execute(f"DELETE FROM chunks WHERE {where}", params)

    def documents_under(self, roots: Sequence[Path]) -> dict[str, int]:
        """Indexed document paths (-> id) lying under any of the given roots; a file's parts
        (``inbox.mbox#2``, a message of a mailbox) lie under the file."""
        found: dict[str, int] = {}
        for root in roots:
            prefix = str(root).rstrip("/") + "/"
            part = str(root).rstrip("/") + "#"
            rows = self.db.execute(
                "SELECT path, id FROM documents "
                "WHERE path = ? OR substr(path, 1, ?) = ? OR substr(path, 1, ?) = ?",
                [str(root), len(prefix), prefix, len(part), part],
            )
            found.update(dict(rows.fetchall()))
        return found

    def list_documents(self) -> list[dict[str, Any]]:
        """Every document with its chunk count per group."""
        docs = {
            row["id"]: {**row, "metadata": json.loads(row["metadata"] or "{}"), "chunks": {}}
            for row in self._dicts("SELECT * FROM documents ORDER BY path")
        }
        counts = self.db.execute(
            "SELECT doc_id, group_name, count(*) FROM chunks GROUP BY doc_id, group_name"
        )
        for doc_id, group, count in counts.fetchall():
            docs[doc_id]["chunks"][group] = count
        return list(docs.values())

    # -- embeddings ---------------------------------------------------------------------
    def embedding_ids(self, hashes: Iterable[str]) -> dict[str, int]:
        """Ids of already-stored embeddings by chunk hash."""
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), _BATCH):
            part = unique[start : start + _BATCH]
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
        for start in range(0, len(chunk_ids), _BATCH):
            part = [int(i) for i in chunk_ids[start : start + _BATCH]]
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

        for start in range(0, len(ids), _BATCH):
            part = [int(i) for i in ids[start : start + _BATCH]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT id, vector FROM embeddings WHERE id IN ({marks})", part
            ).fetchall()
            if rows:
                yield (
                    np.array([r[0] for r in rows], dtype=np.int64),
                    np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(-1, dimension),
                )

    # -- chunks -------------------------------------------------------------------------
    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]:
        """Chunks by id, with their document's path and metadata."""
        found: dict[int, Chunk] = {}
        for start in range(0, len(ids), _BATCH):
            part = [int(i) for i in ids[start : start + _BATCH]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                'SELECT c.id, c.doc_id, c.group_name, c.ord, c.text, c.start, c."end", c.page, '
                "d.path, d.metadata, d.file_name, d.file_type, d.size, d.modified, d.created, d.title "
                f"FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})",
                part,
            )
            for row in rows.fetchall():
                found[row[0]] = Chunk(*row[:9], metadata=_chunk_metadata(row))
        return found

    def chunk_ids_for_embeddings(self, group: str, embedding_ids: Sequence[int]) -> dict[int, list[int]]:
        """Map embedding ids to the ids of the group's chunks that use them."""
        found: dict[int, list[int]] = {}
        for start in range(0, len(embedding_ids), _BATCH):
            part = [int(i) for i in embedding_ids[start : start + _BATCH]]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT embedding_id, id FROM chunks WHERE group_name = ? AND embedding_id IN ({marks}) "
                "ORDER BY id",
                [group, *part],
            )
            for embedding_id, chunk_id in rows.fetchall():
                found.setdefault(embedding_id, []).append(chunk_id)
        return found

    def count(self, table: str, where: str = "", params: Sequence[Any] = ()) -> int:
        sql = f"SELECT count(*) FROM {table}" + (f" WHERE {where}" if where else "")
        return int(self.db.execute(sql, list(params)).fetchone()[0])

    # -- reads for retrieval, ingest and diagnosis ---------------------------------------
    def has_chunks(self, group: str) -> bool:
        """Whether the group holds at least one chunk."""
        row = self.db.execute("SELECT 1 FROM chunks WHERE group_name = ? LIMIT 1", [group]).fetchone()
        return row is not None

    def filter_keys(self) -> list[str]:
        """Filter keys this index knows: the document columns plus every metadata JSON key."""
        from ragcli.store.filters import known_keys

        return known_keys(self.db)

    def chunk_count(self, group: str) -> int:
        """How many chunks the group holds."""
        return self.count("chunks", "group_name = ?", [group])

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

    def filtered_chunk_ids(self, group: str, where: str, params: Sequence[Any]) -> list[int]:
        """Ids of the group's chunks whose documents pass `where` (a condition over `documents d`)."""
        rows = self.db.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id "
            f"WHERE c.group_name = ? AND ({where})",
            [group, *params],
        )
        return [row[0] for row in rows]

    def document_chunks(self, doc_id: int, group: str) -> list[tuple[int, int, int, str]]:
        """(id, start, end, text) of a document's chunks in one group, in reading order."""
        return self.db.execute(
            'SELECT id, start, "end", text FROM chunks WHERE doc_id = ? AND group_name = ? '
            "ORDER BY start, ord",
            [doc_id, group],
        ).fetchall()

    def document_groups(self, doc_id: int) -> list[str]:
        """The groups holding chunks of a document, by name."""
        rows = self.db.execute(
            "SELECT DISTINCT group_name FROM chunks WHERE doc_id = ? ORDER BY group_name", [doc_id]
        )
        return [row[0] for row in rows]

    def document_ids(self) -> dict[str, int]:
        """Path -> id of every document."""
        return dict(self.db.execute("SELECT path, id FROM documents").fetchall())

    def forget_chunked(self, group: str) -> None:
        """Mark every document as not yet chunked for the group (its settings changed)."""
        self.db.execute("DELETE FROM doc_groups WHERE group_name = ?", [group])

    def full_integrity_check(self) -> str:
        """SQLite's `PRAGMA integrity_check` (every page and index): "ok" or the first problem."""
        return self.db.execute("PRAGMA integrity_check").fetchone()[0]

    def change_meta(self) -> list[tuple[str, str]]:
        """The meta values every write changes: the last ingest and the vector files' generations."""
        rows = self.db.execute(
            "SELECT key, value FROM meta WHERE key = 'last_ingest' OR key LIKE 'vectors_generation:%' "
            "ORDER BY key"
        )
        return [tuple(row) for row in rows.fetchall()]

    def content_state(self) -> dict[str, Any]:
        """What identifies the index's content now (`change_meta`, document and chunk counts and
        highest ids), JSON-ready: a cache of answers keys on it."""
        documents = self.db.execute("SELECT count(*), max(id), max(ingested_at) FROM documents").fetchone()
        chunks = self.db.execute("SELECT count(*), max(id) FROM chunks").fetchone()
        return {
            "meta": [list(row) for row in self.change_meta()],
            "documents": list(documents),
            "chunks": list(chunks),
        }

    # -- vectors ------------------------------------------------------------------------
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
