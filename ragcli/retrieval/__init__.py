"""Retrieval: BM25 (SQLite FTS5), dense (vector index), fusion, filters.

Submodules are imported where needed so that a BM25 query never loads the dense stack.
"""
