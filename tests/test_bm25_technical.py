"""BM25 keeps technical tokens whole beside their split words; older indexes are re-analysed."""

from __future__ import annotations

import pytest

from fakes import HashEmbedder
from ragcli.analysis import ANALYZER_VERSION, analyze, index_terms, technical_terms
from ragcli.ingest.pipeline import ingest_documents
from ragcli.retrieval.bm25 import BM25Retriever
from ragcli.store.local.database import Store
from ragcli.types import ChunkSettings, Document

WHOLE = ChunkSettings("word", 2000, 0)

DOCS = {
    "order": "Use -O <orderfile> to control the order in which files appear in the output.",
    "letters": "The letter o is round. O, o and o again: the vowel o is in word, wood and onion.",
    "status": "After a command runs, $? holds its exit status; zero means it succeeded.",
    "exit": "The exit status of a command tells whether it succeeded: zero means success.",
    "paths": "Join the parts with os.path.join() so the separator suits the platform.",
    "join": "To join a club, fill in the form; the club path to membership takes a week. Join us.",
    "shallow": "A shallow clone with --depth=1 fetches only the latest commit of the history.",
    "depth": "The depth of the lake varies; at its deepest the depth is forty metres, depth enough.",
}


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("what does -O do?", ["-O"]),  # one-letter options keep their case
        ("use --depth=<depth> here", ["--depth"]),
        ("check $? after it", ["$?"]),
        ("call os.path.join() once", ["os.path.join"]),
        ("HEAD~2 and HEAD^2?", ["head~2", "head^2"]),
        ("see git-reset(1) and f(x).", ["f(x)"]),  # a manual section is not part of the name
        ("(see .git/info/exclude).", [".git/info/exclude"]),
        ("IL-6 and TDP-43 levels", ["il-6", "tdp-43"]),
        ("a long-term boundary-layer study", []),  # English compounds: split words match both spellings
        ("I don't think it's the user's", []),  # apostrophes alone do not make a technical token
        ("plain words, and a sentence.", []),
    ],
)
def test_technical_tokens_are_kept_whole(text, whole):
    assert technical_terms(text) == whole


def test_split_words_stay_beside_the_whole_token():
    terms = index_terms("os.path.join")
    assert terms[:3] == analyze("os.path.join") == ["os", "path", "join"]
    assert terms[3:] == ["os.path.join"]


def build(index) -> Store:
    documents = [Document(path=name, text=text, file_type="txt") for name, text in DOCS.items()]
    ingest_documents(index, documents, embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    return Store.open(index)


@pytest.mark.parametrize(
    ("query", "expected"),
    [("-O", "order"), ("what is $?", "status"), ("os.path.join", "paths"), ("--depth", "shallow")],
)
def test_a_keyword_question_finds_the_exact_technical_token(isolated_home, query, expected):
    store = build(isolated_home)
    try:
        assert BM25Retriever(store, "medium").search(query, 1)[0].chunk.path == expected
    finally:
        store.close()


def test_an_index_built_with_the_older_analyzer_is_reanalysed_when_opened(isolated_home):
    """Postings written by the split-only analyzer are rebuilt (migration m015) on open."""
    from ragcli.store.local.postings import rebuild_postings

    store = build(isolated_home)
    db = store.db
    # Make it an index of the previous version: split-only terms, m015 not applied.
    db.execute("BEGIN")
    for chunk_id, text in db.execute("SELECT id, text FROM chunks").fetchall():
        db.execute("UPDATE chunks SET tokens = ? WHERE id = ?", [" ".join(analyze(text)), chunk_id])
    import ragcli.analysis as analysis

    original = analysis.term_string
    analysis.term_string = lambda text, title=None: " ".join(analyze(text))
    try:
        rebuild_postings(db)
    finally:
        analysis.term_string = original
    db.execute("DELETE FROM meta WHERE key = 'bm25_analyzer'")
    db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm015_bm25_whole_technical_tokens'")
    db.execute("COMMIT")
    assert BM25Retriever(store, "medium").search("$?", 1) == []
    store.close()

    store = Store.open(isolated_home)
    try:
        assert store.get_meta("bm25_analyzer") == str(ANALYZER_VERSION)
        assert BM25Retriever(store, "medium").search("$?", 1)[0].chunk.path == "status"
        assert BM25Retriever(store, "medium").search("-O", 1)[0].chunk.path == "order"
    finally:
        store.close()


def test_every_chunk_carries_its_documents_title(isolated_home):
    """A passage deep in a page matches the page's title words, though its own text lacks them."""
    manual = Document(
        path="submodules.html",
        text="Submodules manual\n\n" + "A superproject records a commit of each nested repository. " * 40,
        file_type="html",
        metadata={"title": "Submodules manual"},
    )
    other = Document(
        path="notes.txt", text="A manual of nested commit records, kept by hand.", file_type="txt"
    )
    ingest_documents(
        isolated_home,
        [manual, other],
        embedder=HashEmbedder(),
        group="medium",
        chunking=ChunkSettings("word", 60, 0),
    )
    store = Store.open(isolated_home)
    try:
        rows = store.db.execute(
            "SELECT c.text, c.tokens FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE d.path = 'submodules.html' ORDER BY c.ord"
        ).fetchall()
        assert len(rows) > 2 and "Submodules" not in rows[-1][0]
        assert "submodul" in rows[-1][1].split()  # the title's terms joined the last chunk's
        hits = BM25Retriever(store, "medium").search("submodules", 10)
        assert len(hits) == len(rows)  # every chunk of the manual, not only its first
    finally:
        store.close()
