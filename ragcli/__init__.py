"""ragcli: local-first retrieval-augmented generation from the command line.

The library is usable without the CLI::

    from pathlib import Path
    from ragcli import load_embedder
    from ragcli.ingest import ingest
    report = ingest(Path("my-index"), ["docs/"], embedder=load_embedder(None, cache_dir=Path(".cache")))
"""

__version__ = "0.1.0"

__all__ = ["__version__", "ingest_documents", "load_embedder", "Store"]


def __getattr__(name: str):
    # Lazy re-exports keep `import ragcli` (and so `rag --help`) light.
    if name == "ingest_documents":
        from ragcli.ingest import ingest_documents

        return ingest_documents
    if name == "load_embedder":
        from ragcli.embedding import load_embedder

        return load_embedder
    if name == "Store":
        from ragcli.store import Store

        return Store
    raise AttributeError(name)
