"""A Milvus client for a store URI: credentials from the environment only, a dead server or a
Milvus Lite file held by another process told as one line (`StoreUnavailable`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path

from ragcli.errors import StoreUnavailable

TIMEOUT = 10.0  # seconds for a connection or one call: a dead server is an error, not a hang
# Milvus Lite starts its server in the process of the first client of a file. Two threads
# opening the same file at once both start one, and the second finds the file locked by the
# first ("open in another rag process", from `rag serve`'s first requests): one at a time.
_LITE_OPENING = threading.Lock()


def connect(uri: str):
    """A MilvusClient for `uri`; credentials only from the environment.

    Raises:
        StoreUnavailable: the server does not answer within TIMEOUT, or a Milvus Lite file
            is held by another process (one line naming the URI).
    """
    # gRPC's C core would print connection chatter (Milvus Lite's in-process server answers
    # the client's keepalive pings with GOAWAY) on stderr; set before grpc is first imported.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    from pymilvus import MilvusClient

    # pymilvus logs each failed call (and Milvus Lite's missing MVCC timestamps) itself;
    # the error ragcli raises says it once.
    for name in ("pymilvus", "pymilvus.client.iterator.query_iterator", "pymilvus.decorators", "milvus_lite"):
        logging.getLogger(name).setLevel(logging.CRITICAL)

    if uri.endswith(".db"):
        check_lite_manifests(Path(uri))
    # Read here, not in ragcli.config: they must never reach settings, files or the index.
    token = os.environ.get("MILVUS_TOKEN") or ""
    if not token and os.environ.get("MILVUS_USER"):
        token = f"{os.environ['MILVUS_USER']}:{os.environ.get('MILVUS_PASSWORD', '')}"
    try:
        with _LITE_OPENING if uri.endswith(".db") else contextlib.nullcontext():
            return MilvusClient(uri=uri, token=token, timeout=TIMEOUT)
    except Exception as error:  # noqa: BLE001 - pymilvus raises many kinds; all mean "unreachable"
        if uri.endswith(".db") and lite_locked(Path(uri)):
            raise StoreUnavailable(
                f"the Milvus Lite file {uri} is open in another rag process (Milvus Lite serves one "
                "process at a time): try again when it is done, or use a Milvus server to share it"
            ) from error
        raise StoreUnavailable(f"cannot use the Milvus store {uri}: {reason(error)}") from error


def check_lite_present(uri: str) -> None:
    """Refuse a Milvus Lite file an index recorded but that is gone (moved or deleted): Milvus
    Lite would start an empty one in its place, and the index would look empty without saying why.

    Raises:
        StoreUnavailable: one line naming the missing file and what to do.
    """
    if uri.endswith(".db") and not Path(uri).exists():
        raise StoreUnavailable(
            f"the Milvus Lite file {uri} this index uses is missing: put it back (or restore it from a "
            "backup), or start over with another --index and --store"
        )


def check_lite_manifests(folder: Path) -> None:
    """Refuse a Milvus Lite file whose collection manifest is unreadable.

    Milvus Lite then falls back to the previous manifest, an older state (often empty), with
    only a log warning: the documents would seem "unchanged" while their chunks are gone.

    Raises:
        StoreUnavailable: one line naming the damaged manifest and what to do.
    """
    for manifest in sorted(folder.glob("collections/*/manifest.json")):
        try:
            json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise StoreUnavailable(
                f"the Milvus Lite file {folder} is damaged ({manifest.relative_to(folder)} is unreadable: "
                f"{reason(error)}); restore it from a backup, or ingest into a new --store "
                "(your documents are untouched)"
            ) from error


def lite_locked(folder: Path) -> bool:
    """Whether another process holds Milvus Lite's lock on its data folder."""
    import fcntl

    try:
        fd = os.open(folder / "LOCK", os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def reason(error: Exception) -> str:
    text = str(getattr(error, "message", "") or error).strip().splitlines()
    return text[0] if text else type(error).__name__
