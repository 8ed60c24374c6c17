"""The store: where an index keeps its documents, chunks, BM25 terms and vectors.

Everything above this package talks to the `Backend` interface (`ragcli.store.interface`),
opened by `ragcli.store.chooser` from the backend the index records. The implementations are
`ragcli.store.local` (SQLite, BM25 postings, FAISS files: the default) and `ragcli.store.milvus`
(imported only for an index on Milvus); both keep their per-machine settings in the index
directory (`ragcli.store.directory`). All of ragcli's SQL is in this package.
"""

from ragcli.store.chooser import as_backend, create_backend, open_backend
from ragcli.store.interface import Backend, ChunkFilter, DenseSearch, DocumentPiece, LexicalSearch, PieceChunk

__all__ = [
    "Backend",
    "ChunkFilter",
    "DenseSearch",
    "DocumentPiece",
    "LexicalSearch",
    "PieceChunk",
    "as_backend",
    "create_backend",
    "open_backend",
]
