"""Listing the index's documents reads one committed state, even while an ingest commits."""

from __future__ import annotations

from fakes import HashEmbedder
from ragcli.ingest.pipeline import ingest_documents
from ragcli.store.local.database import Store
from test_bm25 import ENGLISH, WHOLE
from test_bm25_batch import documents


def test_listing_documents_sees_one_state_while_an_ingest_commits(isolated_home, monkeypatch):
    """`rag ls` during `rag ingest --watch`: a document committed between reading the documents
    and counting their chunks made the listing fail on a document it had not listed."""
    ingest_documents(
        isolated_home,
        documents({"router": ENGLISH["router"]}),
        embedder=HashEmbedder(),
        group="medium",
        chunking=WHOLE,
    )
    store = Store.open(isolated_home)
    read_documents = store._dicts

    def documents_then_an_ingest(sql, params=()):
        rows = read_documents(sql, params)
        ingest_documents(
            isolated_home,
            documents({"kettle": "Descale the kettle monthly."}),
            embedder=HashEmbedder(),
            group="medium",
            chunking=WHOLE,
        )
        return rows

    monkeypatch.setattr(store, "_dicts", documents_then_an_ingest)
    try:
        listed = store.list_documents()
    finally:
        store.close()
    assert [doc["path"] for doc in listed] == ["router"] and listed[0]["chunks"] == {"medium": 1}
