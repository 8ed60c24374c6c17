"""The on-disk index: one directory holding a SQLite database and per-group vector files.

SQLite is the source of truth (documents, chunks with their BM25 terms, the BM25 postings
of `ragcli.store.local.postings`, and every embedding vector); the FAISS files are derived from
it and carry a generation number (`ragcli.store.local.vector_files`). `Store` is the
database: its connection (`ragcli.store.local.connection`), meta, groups, documents and
chunks here, its embedding rows in `ragcli.store.local.embedding_rows`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ragcli.errors import IndexCorrupt, NotIndexed, UnknownGroup, UsageError
from ragcli.store.local.connection import DATABASE_NAME, connect_database
from ragcli.store.local.embedding_rows import ID_BATCH, EmbeddingRows
from ragcli.store.local.postings import PostingsWriter
from ragcli.store.local.vector_files import VectorFiles
from ragcli.store.interface import PieceChunk
from ragcli.store.ownership import check_format, claim_index_dir
from ragcli.types import Chunk, ChunkSettings
from ragcli.text import PART_SEPARATOR

GROUP_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")


@dataclass(frozen=True)
class NewChunk(PieceChunk):
    """A chunk about to be stored: the piece's chunk (window, page, hash) with its BM25 tokens
    and embedding id."""

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


def read_index_meta(index: Path, key: str) -> str | None:
    """One meta value of the index at `index`; None when there is no index or no such value."""
    if not (index / DATABASE_NAME).is_file():
        return None
    store = Store.open(index)
    try:
        return store.get_meta(key)
    finally:
        store.close()


class ReadSnapshot:
    """`Store.snapshot`: BEGIN on entry and COMMIT on exit unless a transaction is already open.

    A plain class rather than `contextlib.contextmanager`: a warm BM25 query enters two, and the
    generator machinery cost about a microsecond each."""

    __slots__ = ("db", "began")

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.began = not self.db.in_transaction
        if self.began:
            self.db.execute("BEGIN")

    def __exit__(self, *exc: object) -> None:
        if self.began:
            self.db.execute("COMMIT")


class Store(EmbeddingRows, VectorFiles):
    """An index directory. Open it with `Store.open` (must exist) or `Store.create`.

    Its embedding rows (`ragcli.store.local.embedding_rows`) and vector files
    (`ragcli.store.local.vector_files`) are mixins kept in their own modules."""

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
        return cls(path, connect_database(path))

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

    def snapshot(self) -> ReadSnapshot:
        """Reads in the block see one committed state, even while an ingest commits (WAL);
        inside a transaction or another snapshot it adds nothing."""
        return ReadSnapshot(self.db)

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
            part = str(root).rstrip("/") + PART_SEPARATOR
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

    # -- chunks -------------------------------------------------------------------------
    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]:
        """Chunks by id, with their document's path and metadata."""
        found: dict[int, Chunk] = {}
        for start in range(0, len(ids), ID_BATCH):
            part = [int(i) for i in ids[start : start + ID_BATCH]]
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
