"""Which backend an index uses, and opening it (`ragcli.store.backend` is the interface).

`ragcli.store.local` is imported for a local index, `ragcli.store.milvus` (and pymilvus)
only for an index on Milvus.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragcli.errors import UsageError
from ragcli.store.backend import STORE_URI_KEY, Backend, normalise_uri

if TYPE_CHECKING:
    from ragcli.store import Store


def recorded_uri(store: Store) -> str:
    """The backend an index uses: "local" or the Milvus URI recorded when it was created."""
    return store.get_meta(STORE_URI_KEY) or "local"


def choose_store(store: Store, uri: str | None) -> str:
    """Record the backend of a new index, or check that `uri` is the one an index already uses.

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
    store.set_meta(STORE_URI_KEY, wanted)
    return wanted


def backend_for(store: Store) -> Backend:
    """The backend of an open index directory (takes ownership of `store`).

    Raises:
        StoreUnavailable: the Milvus store cannot be reached (one line naming the URI).
    """
    uri = recorded_uri(store)
    if uri == "local":
        from ragcli.store.local import LocalBackend

        return LocalBackend(store)
    from ragcli.store.milvus import MilvusBackend

    return MilvusBackend(store, uri)


def open_backend(index: Path) -> Backend:
    """Open an existing index's backend.

    Raises:
        NotIndexed: there is no index at `index`.
        StoreUnavailable: its Milvus store cannot be reached.
    """
    from ragcli.store import Store

    store = Store.open(Path(index))
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
    from ragcli.store import Store

    store = Store.create(Path(index))
    try:
        choose_store(store, uri)
        return backend_for(store)
    except BaseException:
        store.close()
        raise


def as_backend(store: Any) -> Backend:
    """A backend as given, or an open local `Store` wrapped as its backend (library callers)."""
    from ragcli.store import Store

    return backend_for(store) if isinstance(store, Store) else store
