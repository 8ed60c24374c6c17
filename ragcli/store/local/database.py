"""The local index: one directory holding a SQLite database and per-group vector files.

SQLite is the source of truth (documents, chunks with their BM25 terms, the BM25 postings
of `ragcli.store.local.postings`, and every embedding vector); the FAISS files are derived from
it and carry a generation number (`ragcli.store.local.vector_files`). `Store` is the
database: the index directory's part (opening, meta, groups, transactions) in
`ragcli.store.directory`, documents and chunks here, its embedding rows in
`ragcli.store.local.embedding_rows`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ragcli.store.directory import IndexDirectory, now_iso
from ragcli.store.local.embedding_rows import ID_BATCH, EmbeddingRows
from ragcli.store.local.postings import PostingsWriter
from ragcli.store.local.vector_files import VectorFiles
from ragcli.store.interface import PieceChunk
from ragcli.types import Chunk
from ragcli.text import PART_SEPARATOR


def _chunk_metadata(row: Sequence[Any]) -> dict[str, Any]:
    """A chunk's filterable metadata: the document's columns plus its free-form metadata."""
    meta = json.loads(row[9] or "{}")
    columns = ("file_name", "file_type", "size", "modified", "created", "title")
    meta.update({key: value for key, value in zip(columns, row[10:16]) if value is not None})
    return meta


class Store(IndexDirectory, EmbeddingRows, VectorFiles):
    """An index directory (`ragcli.store.directory.IndexDirectory`) with its documents and
    chunks. Open it with `Store.open` (must exist) or `Store.create`.

    Its embedding rows (`ragcli.store.local.embedding_rows`) and vector files
    (`ragcli.store.local.vector_files`) are mixins kept in their own modules. The BM25
    postings of the chunks a transaction added are written as one segment just before its
    commit, so they land (or vanish) with the chunks."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        super().__init__(path, db)
        self._postings = PostingsWriter(db)
        self._touched: set[str] = set()  # groups whose chunks this transaction changed

    def _before_commit(self) -> None:
        self._postings.flush()
        self._bump_chunk_versions()

    def _after_rollback(self) -> None:
        self._postings.discard()
        self._touched.clear()

    def _bump_chunk_versions(self) -> None:
        """Count each change to a group's chunks or their vectors (`chunk_version`), so a
        vector file written before it is known to be behind, not taken as current."""
        for group in sorted(self._touched):
            self.set_meta(f"chunks_version:{group}", self.chunk_version(group) + 1)
        self._touched.clear()

    def chunk_version(self, group: str) -> int:
        """How many committed transactions changed the group's chunks or their vectors."""
        return int(self.get_meta(f"chunks_version:{group}", "0") or 0)

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

    def clear_chunks(self, doc_id: int, group: str) -> None:
        """Drop a document's chunks in a group and its "chunked" mark (caller holds the transaction).

        A document written over several transactions (a big file) stays unmarked until its
        last chunk is in, so an interrupted one is re-chunked by the next ingest.
        """
        self._delete_chunks("doc_id = ? AND group_name = ?", [doc_id, group])
        self.db.execute("DELETE FROM doc_groups WHERE doc_id = ? AND group_name = ?", [doc_id, group])

    def add_chunks(
        self,
        doc_id: int,
        group: str,
        chunks: Sequence[PieceChunk],
        title: str | None,
        embedding_ids: Mapping[str, int | None],
    ) -> None:
        """Append chunks to a document's group with their BM25 terms (from the text and the
        document's title) and their vector's id by hash, if stored (caller holds the transaction)."""
        from ragcli.analysis import term_string

        for chunk in chunks:
            tokens = term_string(chunk.text, title)
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
                    embedding_ids.get(chunk.hash),
                    tokens,
                ],
            ).lastrowid
            self._postings.add(group, chunk_id, tokens.split())
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
        """Every document with its chunk count per group, both read in one snapshot: an ingest
        committing between the two reads made `rag ls` fail on a document it had not listed."""
        with self.snapshot():
            docs = {
                row["id"]: {**row, "metadata": json.loads(row["metadata"] or "{}"), "chunks": {}}
                for row in self._dicts("SELECT * FROM documents ORDER BY path")
            }
            counts = self.db.execute(
                "SELECT doc_id, group_name, count(*) FROM chunks GROUP BY doc_id, group_name"
            ).fetchall()
        for doc_id, group, count in counts:
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

    def neighbour_chunks(self, doc_id: int, group: str, order: int) -> list[tuple[int, int, int, str]]:
        """(id, start, end, text) of the chunks at `order` - 1 and `order` + 1 of a document's group,
        in reading order (through the (doc_id, group_name, ord) index: two rows, whatever the
        document's size)."""
        return self.db.execute(
            'SELECT id, start, "end", text FROM chunks WHERE doc_id = ? AND group_name = ? '
            "AND ord IN (?, ?) ORDER BY start, ord",
            [doc_id, group, order - 1, order + 1],
        ).fetchall()

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
