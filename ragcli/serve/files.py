"""Which file on disk a request may read: an indexed document's, inside the recorded roots.

The path asked for must be, character for character, one of the index's documents (so `..`,
another file, or a URL-encoded variant of either names nothing); its real location, symlinks
resolved, must still lie under one of the index's recorded roots (resolved too), so a link
that now points elsewhere is refused; and it must be a regular file. Anything else is None,
which the app answers with 404, the same as for a path that never existed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable


def within(path: str, roots: Iterable[str]) -> bool:
    """Whether the real `path` is one of the real `roots` or lies under one."""
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def document_file(requested: str, documents: Iterable[str], roots: Iterable[str]) -> Path | None:
    """The real file of the indexed document `requested`, or None when it may not be served."""
    if "\x00" in requested or requested not in set(documents):
        return None
    roots = list(roots)
    if not within(requested, roots):
        return None
    real = Path(os.path.realpath(requested))
    return real if real.is_file() else None


def ingest_targets(paths: Iterable[str], roots: Iterable[str]) -> list[str] | None:
    """`paths` when every one lies under a recorded root (real paths compared), else None."""
    roots = list(roots)
    paths = list(paths)
    if not roots or not all(os.path.isabs(path) and within(path, roots) for path in paths):
        return None
    return paths
