"""The embedding pass in process: every chunk gets a vector, every distinct text embedded once."""

from __future__ import annotations

import sqlite3

from ragcli.ingest.pipeline import embed_index, ingest


def test_texts_repeated_across_batches_are_embedded_once(tmp_path, isolated_home, fake_embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    for number in range(40):  # 10 distinct texts, each in 4 files far apart in walk order
        (docs / f"n{number:02d}.txt").write_text(f"Shared note {number % 10} about rivers and bees.")
    report = ingest(isolated_home, [docs], embedder=fake_embedder, defer_embedding=True)
    assert report.chunks == 40 and report.embedded == 0 and fake_embedder.calls == 0
    embedded = embed_index(isolated_home, embedder=fake_embedder, batch_chunks=3)  # many small batches
    assert embedded.chunks == 40 and embedded.remaining == 0
    assert len(fake_embedder.embedded_texts) == embedded.embedded == 10
    with sqlite3.connect(isolated_home / "index.db") as conn:
        assert conn.execute("SELECT count(*) FROM chunks WHERE embedding_id IS NULL").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 10
