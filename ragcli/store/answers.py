"""The answer cache's storage: answers as JSON by key in ``<index>/answers.db``.

Its own SQLite file, not a table of ``index.db``: a cache write never takes the index's
write lock (a query can run during an ingest) and deleting the file is always safe. What
the keys mean is `ragcli.answer.cache`'s business.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Mapping

CACHE_FILE = "answers.db"


def state_digest(state: Mapping[str, Any]) -> str:
    """A short stable name for an index state."""
    blob = json.dumps(state, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class AnswerCache:
    """Answers stored as JSON by key, in ``<index>/answers.db``.

    Args:
        index: the index directory (must exist).
    """

    def __init__(self, index: Path) -> None:
        self.path = index / CACHE_FILE
        self._conn = sqlite3.connect(
            str(self.path), timeout=30, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA busy_timeout = 30000")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, state TEXT NOT NULL, "
            "answer TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer record, or None."""
        row = self._conn.execute("SELECT answer FROM answers WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, record: Mapping[str, Any], *, state: Mapping[str, Any]) -> None:
        """Store one answer record made over index `state`; answers over any older state go."""
        digest = state_digest(state)
        self._conn.execute("DELETE FROM answers WHERE state != ?", [digest])
        self._conn.execute(
            "INSERT OR REPLACE INTO answers (key, state, answer, created) VALUES (?, ?, ?, ?)",
            [key, digest, json.dumps(record, ensure_ascii=False, default=str), time.time()],
        )

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM answers").fetchone()[0])

    def clear(self) -> int:
        """Forget every answer; returns how many there were."""
        return self._conn.execute("DELETE FROM answers").rowcount

    def close(self) -> None:
        self._conn.close()
