"""Errors raised by the library. Each message says what went wrong and how to fix it.

The CLI maps every `RagError` to one line on stderr and exit code 1 (or the class's
`exit_code`); nothing below the CLI exits the process.
"""

from __future__ import annotations


class RagError(Exception):
    """Base class for every error ragcli reports to a user."""

    exit_code = 1


class UsageError(RagError):
    """A bad argument or setting value (exit code 2, like a bad flag)."""

    exit_code = 2


class NotIndexed(RagError):
    """The index does not exist yet or holds nothing to search."""


class NotFound(RagError):
    """The asked-for document, page or chunk is not in the index."""


class IndexMismatch(RagError):
    """The index was built with other settings (model, dimension) than asked for."""


class IndexBusy(RagError):
    """Another process holds the index's write lock longer than we can wait."""


class IndexCorrupt(RagError):
    """The index files are damaged beyond automatic repair."""


class ReaderError(RagError):
    """A file could not be read; the message names the file and the reason."""


class ModelNotFound(RagError):
    """A model (embedding, GGUF, cross-encoder) could not be found or loaded."""


class UnknownGroup(RagError):
    """A chunk group that the index does not have was asked for."""


class UnknownFilter(RagError):
    """A filter key that no document carries was asked for."""


class StorageFull(RagError):
    """The disk (or quota) filled up while writing; what was committed before is kept."""


class StoreUnavailable(RagError):
    """The index's remote store (Milvus) cannot be reached or is not usable."""


class AddressUnavailable(RagError):
    """`rag serve` cannot listen where asked: the port is in use, privileged, or not this machine's."""


class IndexClosed(RagError):
    """A `Searcher` or `Asker` (from `Index.searcher()` / `Index.asker()`) used after it was closed."""
