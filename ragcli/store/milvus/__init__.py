"""The Milvus backend (`ragcli.store.milvus.backend`), imported only for an index on Milvus:
its collections and rows (`ragcli.store.milvus.schema`) and its BM25 and vector search
(`ragcli.store.milvus.search`). Nothing is imported here, so pymilvus stays unloaded.
"""
