"""The local backend: the index directory's SQLite database with its documents and chunks
(`ragcli.store.local.database`: `Store`, over `ragcli.store.directory.IndexDirectory`), its
BM25 postings and scorer (`ragcli.store.local.postings`), the FAISS vector files
(`ragcli.store.local.vectors`, `ragcli.store.local.ann`) and `LocalBackend`, the
`ragcli.store.interface.Backend` over them (`ragcli.store.local.backend`).
"""
