"""Retrieval: BM25 (postings in SQLite), dense (vector index), fusion, filters.

Submodules are imported where needed so that a BM25 query never loads the dense stack.
"""
