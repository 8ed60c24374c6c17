"""Named schema migrations, applied in order when a store is opened.

Never edit or rename a shipped migration: add a new one with the next number, and its
name to `ragcli.store.local.schema.MIGRATION_NAMES` (the store checks that list to skip importing sqlite-utils
when nothing is pending; a test keeps the two in step).
"""

from __future__ import annotations

from sqlite_utils.migrations import Migrations

migrations = Migrations("ragcli")
MIGRATION_BATCH = 50_000  # chunks per BM25 segment written by m007


@migrations()
def m001_create_meta(db):
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")


@migrations()
def m002_create_documents(db):
    # AUTOINCREMENT: ids are never reused, so a stale vector file can never point a
    # recycled id at the wrong text.
    db.execute(
        """CREATE TABLE documents (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            path TEXT NOT NULL UNIQUE,
            file_name TEXT, file_type TEXT, size INTEGER,
            modified TEXT, created TEXT, title TEXT,
            content_hash TEXT NOT NULL,
            metadata TEXT,
            ingested_at TEXT
        )"""
    )


@migrations()
def m003_create_groups(db):
    db.execute(
        """CREATE TABLE groups (
            name TEXT PRIMARY KEY,
            split_by TEXT NOT NULL, chunk_size INTEGER NOT NULL, chunk_overlap INTEGER NOT NULL,
            created_at TEXT
        )"""
    )


@migrations()
def m004_create_embeddings(db):
    db.execute(
        """CREATE TABLE embeddings (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            hash TEXT NOT NULL UNIQUE,
            vector BLOB NOT NULL
        )"""
    )


@migrations()
def m005_create_chunks(db):
    db.execute(
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            doc_id INTEGER NOT NULL REFERENCES documents(id),
            group_name TEXT NOT NULL REFERENCES groups(name),
            ord INTEGER NOT NULL,
            text TEXT NOT NULL,
            start INTEGER NOT NULL, "end" INTEGER NOT NULL, page INTEGER,
            hash TEXT NOT NULL,
            embedding_id INTEGER REFERENCES embeddings(id)
        )"""
    )
    db.execute("CREATE INDEX idx_chunks_doc_group ON chunks (doc_id, group_name, ord)")
    db.execute("CREATE INDEX idx_chunks_group_embedding ON chunks (group_name, embedding_id)")
    db.execute("CREATE INDEX idx_chunks_embedding ON chunks (embedding_id)")


@migrations()
def m006_create_doc_groups(db):
    # Which content hash of a document each group was chunked from: a document is
    # unchanged for a group only when both match.
    db.execute(
        """CREATE TABLE doc_groups (
            doc_id INTEGER NOT NULL REFERENCES documents(id),
            group_name TEXT NOT NULL REFERENCES groups(name),
            content_hash TEXT NOT NULL,
            PRIMARY KEY (doc_id, group_name)
        )"""
    )


@migrations()
def m007_bm25_postings(db):
    # BM25 moves from per-group FTS5 tables to numpy-scored postings (ragcli.store.local.postings):
    # each chunk keeps its analysed terms, and each group's chunks become segments of at
    # most MIGRATION_BATCH chunks (merged as usual), so memory stays bounded on big indexes.
    from ragcli.analysis import term_string
    from ragcli.store.local.postings import SCHEMA, write_segment

    db.execute("ALTER TABLE chunks ADD COLUMN tokens TEXT")
    db.execute("ALTER TABLE chunks ADD COLUMN bm25_segment INTEGER")
    for statement in SCHEMA:
        db.execute(statement)
    conn = db.conn
    for (group,) in conn.execute("SELECT name FROM groups").fetchall():
        table = f"fts_{group}"
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [table]).fetchone():
            conn.execute(
                f"UPDATE chunks SET tokens = (SELECT tokens FROM {table} WHERE rowid = chunks.id) "
                "WHERE group_name = ?",
                [group],
            )
            conn.execute(f"DROP TABLE {table}")
        # Chunks the FTS table lacked get their terms the way ingest makes them.
        missing = conn.execute(
            "SELECT id, text FROM chunks WHERE group_name = ? AND tokens IS NULL", [group]
        ).fetchall()
        conn.executemany(
            "UPDATE chunks SET tokens = ? WHERE id = ?",
            ((term_string(text), chunk_id) for chunk_id, text in missing),
        )
        last = 0
        while True:
            rows = conn.execute(
                "SELECT id, tokens FROM chunks WHERE group_name = ? AND id > ? ORDER BY id LIMIT ?",
                [group, last, MIGRATION_BATCH],
            ).fetchall()
            if not rows:
                break
            write_segment(conn, group, [(chunk_id, tokens.split()) for chunk_id, tokens in rows])
            last = rows[-1][0]


@migrations()
def m014_bm25_deleted(db):
    # Deleted chunks become marks per segment instead of rewritten postings rows
    # (ragcli.store.local.postings.apply_removals); readers cache postings per generation.
    from ragcli.store.local.postings import DELETED_SCHEMA, GENERATION_KEY

    db.execute(DELETED_SCHEMA)
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, 1)", [GENERATION_KEY])


@migrations()
def m015_bm25_whole_technical_tokens(db):
    # The analyzer now keeps technical tokens (`--depth`, `$?`, `os.path.join`) whole beside
    # their split words, and a chunk's terms include its document's title (ragcli.analysis,
    # ANALYZER_VERSION 2): every chunk's terms are made again and each group's postings rebuilt
    # from them, so old and new chunks score alike.
    from ragcli.store.local.postings import rebuild_postings

    rebuild_postings(db.conn, MIGRATION_BATCH)


@migrations()
def m016_bm25_without_link_targets(db):
    # The analyzer no longer indexes the targets of Markdown links (`[npm audit](/commands/
    # npm-audit)` counts "npm audit" once, not twice; ragcli.analysis, ANALYZER_VERSION 3).
    from ragcli.store.local.postings import rebuild_postings

    rebuild_postings(db.conn, MIGRATION_BATCH)
