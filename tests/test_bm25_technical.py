"""BM25 keeps technical tokens whole beside their split words; older indexes are re-analysed."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import HashEmbedder
from ragcli.analysis import ANALYZER_VERSION, analyze, index_terms, technical_terms
from ragcli.ingest.pipeline import ingest, ingest_documents
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


@pytest.mark.parametrize(
    ("linked", "plain"),
    [
        ("See [`npm audit`](/commands/npm-audit) for details.", "See `npm audit` for details."),
        ("the [original PR](https://github.com/npm/cli/pull/129).", "the [original PR]."),
        ('a [guide](docs/guide.md#setup "Setup") here', "a [guide] here"),
        ("[config](../using-npm/config#workspaces) and [top](#top)", "[config] and [top]"),
    ],
)
def test_markdown_link_targets_are_not_indexed(linked, plain):
    """A link's target is markup: only its text counts, as in the rendered page."""
    assert index_terms(linked) == index_terms(plain)


def test_brackets_that_are_no_link_keep_their_words():
    """`[Ca(2+)](i)` is a formula, not a link: its `(i)` stays."""
    assert "i" in index_terms("a rise in [Ca(2+)](i) was seen")


def test_entry_point_a_page_of_links_does_not_outrank_the_page_they_point_to(isolated_home, tmp_path):
    """`rag query --mode bm25 workspaces` put a page that only links to the workspaces guide
    above the guide: each link's target (`/using-npm/workspaces#workspaces`) counted the word
    again, so two links weighed as six mentions."""
    from runner import rag

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text(
        "Workspaces group several packages in one repository. Each of the workspaces has its "
        "own package file, and all workspaces share a single lock file at the root.\n",
        encoding="utf-8",
    )
    link = "[workspaces](/using-npm/workspaces#workspaces)"
    (folder / "commands.md").write_text(
        f"Run a script in every package of the project, or only in some {link}; list the "
        f"installed packages of {link} with their versions and the folders they live in.\n",
        encoding="utf-8",
    )
    ingest(isolated_home, [folder], embedder=HashEmbedder(), chunking=WHOLE)
    done = rag("query", "workspaces", "--mode", "bm25", "--format", "paths", stdin="")
    assert done.returncode == 0, done.stderr
    assert [Path(path).name for path in done.stdout.splitlines()] == ["guide.md", "commands.md"]


def test_an_index_that_counted_link_targets_is_reanalysed_when_opened(isolated_home):
    """Terms written before link targets were left out are made again (migration m016) on open."""
    linked = Document(path="links.md", text="Read the [guide](/using-npm/workspaces) first.", file_type="md")
    ingest_documents(isolated_home, [linked], embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    store = Store.open(isolated_home)
    db = store.db
    db.execute("BEGIN")
    db.execute("UPDATE chunks SET tokens = 'read guid use npm workspac first'")
    db.execute("UPDATE meta SET value = 2 WHERE key = 'bm25_analyzer'")
    db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm016_bm25_without_link_targets'")
    db.execute("COMMIT")
    store.close()

    store = Store.open(isolated_home)
    try:
        assert store.get_meta("bm25_analyzer") == str(ANALYZER_VERSION)
        tokens = store.db.execute("SELECT tokens FROM chunks").fetchone()[0]
        assert tokens.split() == ["read", "guid", "first"]
    finally:
        store.close()


def test_entry_point_a_passage_deep_in_a_text_file_matches_the_files_name(isolated_home, tmp_path):
    """`rag query "ls human-readable sizes"` ranked du's manual above ls's: the ls manual's option
    list never says "ls" (its name is in the file name and the first lines only), and a plain
    text file had no title to carry it to every chunk, as an HTML or Markdown page's title does."""
    from runner import rag

    folder = tmp_path / "man"
    folder.mkdir()
    options = "".join(
        f"       -{letter}     an option of the listing, number {letter}\n" for letter in "abcdefg"
    )
    (folder / "ls.1.txt").write_text(
        "LS(1)\n\nNAME\n       ls - list directory contents\n\n"
        + options * 3
        + "       -h, --human-readable\n              print sizes like 1K 234M 2G\n",
        encoding="utf-8",
    )
    (folder / "du.1.txt").write_text(
        "DU(1)\n\nNAME\n       du - estimate file space usage\n\n"
        "       -h, --human-readable\n              print sizes in powers of 1024\n",
        encoding="utf-8",
    )
    for number in range(40):  # the other manuals of a system: "ls" is a rare word among them
        (folder / f"tool{number}.1.txt").write_text(
            f"TOOL{number}(1)\n\nNAME\n       tool{number} - a tool that does task {number}\n",
            encoding="utf-8",
        )
    ingest(isolated_home, [folder], embedder=HashEmbedder(), chunking=ChunkSettings("word", 60, 0))
    done = rag("query", "ls human-readable sizes", "--mode", "bm25", "-k", "1", "--format", "paths", stdin="")
    assert done.returncode == 0, done.stderr
    assert [Path(path).name for path in done.stdout.splitlines()] == ["ls.1.txt"]
