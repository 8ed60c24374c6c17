"""A cache of finished answers, so asking the same question again is instant.

The key is a sha256 of the question, the answer options that change the answer (retrieval
settings, model, context size, sampling; not `use_cache`), the model's fingerprint (path,
size, mtime), the identity of ragcli's own code (`code_identity`: an upgrade that answers
differently must not be served the old version's answers) and the index state: the
``last_ingest`` record, every group's vector generation and the documents' and chunks' counts
and newest ids. Any ingest or `rag rm` changes that state, so old entries are never looked up
again; the next write deletes them.

The cache lives in its own SQLite file, ``answers.db`` (`ragcli.store.answers`), in the
index directory rather than a table of ``index.db``: a cache write never takes the index's
write lock (a query can run during an ingest) and deleting the file is always safe.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping

from ragcli.store.answers import CACHE_FILE, AnswerCache, state_digest

if TYPE_CHECKING:
    from ragcli.store.local.database import Store

__all__ = ["CACHE_FILE", "AnswerCache", "cache_key", "code_identity", "index_state", "state_digest"]


def index_state(store: "Store") -> dict[str, Any]:
    """What identifies the index's content now (`Store.content_state`)."""
    return store.content_state()


def file_identity(path: str | None) -> str | None:
    """A file or folder's identity for the key: resolved path, size and mtime (None: no such path)."""
    from pathlib import Path

    if not path:
        return None
    target = Path(path).expanduser()
    try:
        stat = target.stat()
    except OSError:
        return None
    newest = max((p.stat().st_mtime_ns for p in target.iterdir()), default=0) if target.is_dir() else 0
    return f"{target.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{newest}"


@lru_cache(maxsize=4)
def code_identity(package: str | None = None) -> str:
    """The installed code of `package` (default: ragcli itself): a digest of every module's
    relative path, size and modification time. Any upgrade or edit changes it; only file
    metadata is read, once a process (a directory walk of about 2 ms), not the sources."""
    from pathlib import Path

    root = Path(package) if package else Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def cache_key(
    question: str, options: Mapping[str, Any], model_fingerprint: str, state: Mapping[str, Any]
) -> str:
    """The sha256 naming one answer: question, normalised options, model and index state."""
    payload = {
        "question": " ".join(question.split()),
        "options": options,
        "model": model_fingerprint,
        "index": state,
    }
    blob = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
