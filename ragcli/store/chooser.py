"""Which backend an index uses, and opening it (`ragcli.store.interface` is the interface).

`ragcli.store.local.backend` is imported for a local index, `ragcli.store.milvus.backend` (and pymilvus)
only for an index on Milvus.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcli.errors import UsageError
from ragcli.store.interface import STORE_URI_KEY, Backend, normalise_uri

if TYPE_CHECKING:
    from ragcli.store.directory import IndexDirectory


def recorded_uri(store: IndexDirectory) -> str:
    """The backend an index uses: "local" or the Milvus URI recorded when it was created."""
    return store.get_meta(STORE_URI_KEY) or "local"


def choose_store(store: IndexDirectory, uri: str | None) -> str:
    """The backend an index is to use: its recorded one, or `uri` for an index still empty.

    Raises:
        UsageError: `uri` names another backend than the index's (one line, both named).
    """
    current = recorded_uri(store)
    if uri is None:
        return current
    wanted = normalise_uri(uri)
    if wanted == current:
        return current
    empty = store.get_meta(STORE_URI_KEY) is None and store.count("documents") == 0
    if not empty:
        raise UsageError(
            f"--store {uri}: the index at {store.path} already uses {current}; "
            "use another --index for another store"
        )
    return wanted


def backend_for(store: IndexDirectory, uri: str | None = None) -> Backend:
    """The backend of an open index directory (takes ownership of `store`): its recorded one,
    or `uri` (recorded once it could be opened, so an unreachable URI pins nothing). Only a
    local index reads the directory's database as its `Store` (documents, chunks, vectors).

    Raises:
        StoreUnavailable: the Milvus store cannot be reached (one line naming the URI).
    """
    recorded = recorded_uri(store)
    uri = uri or recorded
    if uri == "local":
        from ragcli.store.local.backend import LocalBackend
        from ragcli.store.local.database import Store

        return LocalBackend(store if isinstance(store, Store) else Store(store.path, store.db))
    from ragcli.store.milvus.backend import MilvusBackend

    backend = MilvusBackend(store, uri)
    if uri != recorded:
        store.set_meta(STORE_URI_KEY, uri)
    return backend


def open_backend(index: Path) -> Backend:
    """Open an existing index's backend.

    Raises:
        NotIndexed: there is no index at `index`.
        StoreUnavailable: its Milvus store cannot be reached.
    """
    from ragcli.store.directory import IndexDirectory

    store = IndexDirectory.open(Path(index))
    try:
        return backend_for(store)
    except BaseException:
        store.close()
        raise


def create_backend(index: Path, uri: str | None = None) -> Backend:
    """Open an index's backend, creating the index directory (recording `uri`) when missing.

    Raises:
        UsageError: `uri` differs from the index's recorded store.
        StoreUnavailable: the Milvus store cannot be reached.
    """
    from ragcli.store.directory import IndexDirectory

    store = IndexDirectory.create(Path(index))
    try:
        return backend_for(store, choose_store(store, uri))
    except BaseException:
        store.close()
        raise


def as_backend(store: Any) -> Backend:
    """A backend as given, or an open index directory (a local `Store`) wrapped as its backend
    (library callers)."""
    from ragcli.store.directory import IndexDirectory

    return backend_for(store) if isinstance(store, IndexDirectory) else store
