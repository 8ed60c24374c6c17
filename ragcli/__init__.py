"""ragcli: local-first retrieval-augmented generation from the command line.

The library is usable without the CLI; `open_index` is its front door::

    import ragcli

    with ragcli.open_index("my-index") as index:
        index.ingest(["docs/"])
        hits = index.search("how do I reset the router?", top_k=3)
        answer = index.ask("How do I reset the router?")
"""

from ragcli.offline import keep_offline

# First thing, before any dependency is imported: the CLI, `rag mcp` and `open_index` all come
# through here (see ragcli.offline).
keep_offline()

__version__ = "0.1.0"

__all__ = ["__version__", "Index", "open_index", "ingest_documents", "load_embedder", "Store"]


def __getattr__(name: str):
    # Lazy re-exports keep `import ragcli` (and so `rag --help`) light.
    if name in ("Index", "open_index"):
        from ragcli import index

        return getattr(index, name)
    if name == "ingest_documents":
        from ragcli.ingest.pipeline import ingest_documents

        return ingest_documents
    if name == "load_embedder":
        from ragcli.embedding import load_embedder

        return load_embedder
    if name == "Store":
        from ragcli.store.local.database import Store

        return Store
    raise AttributeError(name)
