"""Ingest: files to chunks in the store.

`walk` lists the files, `readers` turns each into a `Document`, `splitting` cuts it into
chunks, `pipeline` runs it all (`ingest`, `ingest_documents`, `remove_paths`).
Submodules are imported where needed, so importing this package loads nothing.
"""
