"""The names of the shipped migrations, importable without sqlite-utils.

`Store` compares them with the applied ones to decide whether `migrations.py` (and so
sqlite-utils) must be imported at all; a test keeps this list equal to the migrations.
"""

MIGRATION_NAMES = (
    "m001_create_meta",
    "m002_create_documents",
    "m003_create_groups",
    "m004_create_embeddings",
    "m005_create_chunks",
    "m006_create_doc_groups",
    "m007_bm25_postings",
    "m014_bm25_deleted",
    "m015_bm25_whole_technical_tokens",
    "m016_bm25_without_link_targets",
)
