"""BM25 postings: equal to rank-bm25 on real text; Chinese finds Chinese; filters; incremental updates."""

from __future__ import annotations

from collections import Counter

import pytest
from rank_bm25 import BM25Okapi

from fakes import HashEmbedder
from ragcli.ingest.pipeline import ingest_documents
from ragcli.analysis import index_terms, term_string
from ragcli.retrieval.base import ChunkFilter
from ragcli.retrieval.bm25 import BM25Retriever
from ragcli.retrieval.filters import filters_sql
from ragcli.store.local.database import Store
from ragcli.types import ChunkSettings, Document

# One chunk per document: windows far longer than any passage.
WHOLE = ChunkSettings("word", 2000, 0)

ENGLISH = {
    "bread": "Sourdough bread is leavened by a starter, a living culture of wild yeast and lactic acid "
    "bacteria, instead of commercial baker's yeast. The bacteria give the loaf a tangy flavour.",
    "starter": "A starter is fed with equal weights of flour and water. Kept in the refrigerator it can "
    "wait about a week between feedings; a healthy starter doubles within eight hours.",
    "lighthouse": "The lighthouse keeper climbed the spiral stairs every evening to light the lamp, "
    "whose beam warned ships away from the rocks of the northern coast.",
    "fresnel": "Augustin Fresnel designed a lens of concentric glass prisms that bent the light of a "
    "single lamp into a beam visible more than twenty miles out at sea.",
    "octopus": "An octopus has three hearts and blue blood; two hearts pump blood through the gills "
    "while the third pumps it through the rest of the body.",
    "camouflage": "Octopuses change colour and skin texture in a fraction of a second, using "
    "chromatophores controlled directly by their nervous system.",
    "everest": "Mount Everest, at 8,849 metres, is the highest mountain above sea level; climbers "
    "need bottled oxygen above the so-called death zone near 8,000 metres.",
    "k2": "K2 is the second highest mountain on Earth and is considered far more dangerous to climb "
    "than Everest, with steep rock, ice and sudden storms.",
    "tea": "Green tea leaves are steamed or pan fired soon after picking, which stops oxidation and "
    "keeps the leaves green and the taste fresh and grassy.",
    "coffee": "Espresso is brewed by forcing hot water through finely ground coffee at high pressure, "
    "producing a small, concentrated cup topped with crema.",
    "danube": "The Danube flows through ten countries, more than any other river in the world, "
    "before emptying into the Black Sea through a wide delta.",
    "rhine": "The Rhine rises in the Swiss Alps and flows north through Germany and the Netherlands "
    "into the North Sea; barges carry coal and grain along it.",
    "router": "To reset the router, hold the small button on the back for ten seconds until the "
    "lights blink, then wait two minutes for it to restart.",
    "wifi": "If the wireless network is slow, move the router away from walls and microwaves, "
    "or switch it to the less crowded five gigahertz band.",
}

CHINESE = {
    "zh-tea": "中国是茶的故乡，饮茶的历史已有数千年。唐代的陆羽写成了世界上第一部茶学专著《茶经》。",
    "zh-wall": "长城是中国古代规模最大的军事防御工程。它东起河北的山海关，西到甘肃的嘉峪关。",
    "zh-panda": "大熊猫生活在四川的竹林里，每天要吃十几个小时的竹子，是中国的国宝。",
}

QUERIES = [
    "sourdough starter yeast",
    "lighthouse lamp beam",
    "octopus hearts blood",
    "highest mountain",
    "reset the router",
    "river flows into the sea",
    "green tea leaves",
    "climbing Everest oxygen",
    "coffee brewed with hot water",
]


def build(index, docs: dict[str, str]) -> Store:
    documents = [
        Document(
            path=name, text=text, file_type="txt", metadata={"lang": "zh" if name.startswith("zh") else "en"}
        )
        for name, text in docs.items()
    ]
    ingest_documents(index, documents, embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    return Store.open(index)


@pytest.fixture
def english(isolated_home):
    store = build(isolated_home, ENGLISH)
    yield store
    store.close()


def reference(store: Store) -> tuple[BM25Okapi, list[str]]:
    rows = store.db.execute(
        "SELECT c.id, d.path, c.text FROM chunks c JOIN documents d ON d.id = c.doc_id ORDER BY c.id"
    ).fetchall()
    return BM25Okapi([index_terms(text) for _, _, text in rows], k1=1.2, b=0.75), [
        path for _, path, _ in rows
    ]


def test_corpus_has_no_term_in_more_than_half_the_documents():
    # The precondition under which our idf equals rank-bm25's (no negative idf floor).
    frequency = Counter(term for text in ENGLISH.values() for term in set(index_terms(text)))
    assert max(frequency.values()) <= len(ENGLISH) // 2


@pytest.mark.parametrize("query", QUERIES)
def test_scores_and_ranking_equal_rank_bm25(english, query):
    bm25, paths = reference(english)
    expected = bm25.get_scores(index_terms(query))
    hits = BM25Retriever(english, "medium").search(query, k=len(paths))
    assert hits, query
    assert {h.chunk.path for h in hits} == {p for p, s in zip(paths, expected) if s > 0}
    by_path = dict(zip(paths, expected))
    for hit in hits:
        assert hit.score == by_path[hit.chunk.path]  # bit for bit: same expressions, same order
    ranked = sorted(zip(paths, expected), key=lambda item: -item[1])[:10]
    top = [hit.chunk.path for hit in hits[:10]]
    # Identical order wherever the reference scores differ (ties may come out either way).
    for (path, score), got in zip(ranked, top):
        assert path == got or by_path[got] == pytest.approx(score, rel=1e-9)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_top_hits_are_the_obvious_passages(english):
    retriever = BM25Retriever(english, "medium")
    assert retriever.search("how do I reset my router?", 1)[0].chunk.path == "router"
    assert retriever.search("Fresnel lens prisms", 1)[0].chunk.path == "fresnel"
    # Stemming: "climbers" and "climb" meet "climbed"/"climb".
    assert {h.chunk.path for h in retriever.search("climbing", 5)} >= {"lighthouse", "k2"}


def test_query_of_only_stop_words_or_punctuation_finds_nothing(english):
    retriever = BM25Retriever(english, "medium")
    assert retriever.search("the and of", 5) == []
    assert retriever.search("?!", 5) == []


def test_query_syntax_is_taken_literally(english):
    retriever = BM25Retriever(english, "medium")
    for query in [
        'router" OR "tea',
        "router AND NOT tea",
        "NEAR(router tea)",
        "router*",
        'a "quoted" word',
        "col:router",
        "(router",
    ]:
        hits = retriever.search(query, 3)  # operators are words like any other, never syntax
        assert all(h.score > 0 for h in hits)


def test_filters_restrict_the_hits(english):
    retriever = BM25Retriever(english, "medium")
    where, params = filters_sql({"path": ("rhine", "danube")})
    hits = retriever.search("river sea", 10, ChunkFilter(where, tuple(params)))
    assert {h.chunk.path for h in hits} == {"rhine", "danube"}
    where, params = filters_sql({"path": ("router",)})
    assert retriever.search("river sea", 10, ChunkFilter(where, tuple(params))) == []


def test_index_updates_incrementally_with_ingest(isolated_home):
    store = build(isolated_home, ENGLISH)
    store.close()
    changed = {**ENGLISH, "router": "Unplug the modem and plug it back in after thirty seconds."}
    del changed["wifi"]
    store = build(isolated_home, changed)
    try:
        retriever = BM25Retriever(store, "medium")
        assert [h.chunk.path for h in retriever.search("modem unplug", 3)] == ["router"]
        assert "wifi" not in {h.chunk.path for h in retriever.search("wireless microwaves gigahertz", 5)}
        bm25, paths = reference(store)
        expected = dict(zip(paths, bm25.get_scores(index_terms("router modem"))))
        for hit in retriever.search("router modem", 10):
            assert hit.score == pytest.approx(expected[hit.chunk.path], rel=1e-6)
    finally:
        store.close()


def test_chinese_query_finds_chinese_passages(isolated_home):
    store = build(isolated_home, {**ENGLISH, **CHINESE})
    try:
        retriever = BM25Retriever(store, "medium")
        assert retriever.search("陆羽和《茶经》", 1)[0].chunk.path == "zh-tea"
        assert retriever.search("长城在哪里？", 1)[0].chunk.path == "zh-wall"
        assert retriever.search("大熊猫吃什么", 1)[0].chunk.path == "zh-panda"
        # An English query about tea finds the English passage first, not the Chinese one.
        english_hits = retriever.search("green tea leaves", 5)
        assert english_hits[0].chunk.path == "tea"
        assert all(not h.chunk.path.startswith("zh") for h in english_hits)
    finally:
        store.close()


def test_many_small_writes_merges_and_deletions_score_like_a_fresh_build(isolated_home, tmp_path):
    """One segment per transaction, merged 8 at a time, deletions rewritten in place: the
    scores must stay exactly those of one clean build of the same chunks."""
    from ragcli.store.local.postings import MERGE_FANOUT

    texts = {f"{name}-{i}": f"{text} Copy {i}." for i in range(6) for name, text in ENGLISH.items()}
    documents = [Document(path=name, text=text, file_type="txt") for name, text in texts.items()]
    for count in range(1, len(documents) + 1):  # each run adds one document: one tiny segment
        ingest_documents(
            isolated_home, documents[:count], embedder=HashEmbedder(), group="medium", chunking=WHOLE
        )
    store = Store.open(isolated_home)
    segments = store.db.execute("SELECT count(*) FROM bm25_segments").fetchone()[0]
    assert segments < len(texts) // 4  # merged as they came
    with store.transaction():
        gone = [
            doc_id for (doc_id,) in store.db.execute("SELECT id FROM documents WHERE path LIKE 'router-%'")
        ]
        store.delete_documents(gone)
    fresh_index = tmp_path / "fresh"
    kept = [
        Document(path=name, text=text, file_type="txt")
        for name, text in texts.items()
        if not name.startswith("router-")
    ]
    ingest_documents(fresh_index, kept, embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    fresh = Store.open(fresh_index)
    try:
        for query in QUERIES + ["router reset button", "copy"]:
            got = [
                (h.chunk.path, round(h.score, 9)) for h in BM25Retriever(store, "medium").search(query, 999)
            ]
            want = [
                (h.chunk.path, round(h.score, 9)) for h in BM25Retriever(fresh, "medium").search(query, 999)
            ]
            assert sorted(got) == sorted(want), query
            assert all(not path.startswith("router-") for path, _ in got)
        assert store.db.execute(
            "SELECT max(c) FROM (SELECT count(*) AS c FROM bm25_segments GROUP BY group_name)"
        ).fetchone()[0] <= 3 * (MERGE_FANOUT - 1)
    finally:
        store.close()
        fresh.close()


def test_a_failed_transaction_leaves_no_postings(english):
    before = [(h.chunk.path, h.score) for h in BM25Retriever(english, "medium").search("router", 5)]
    with pytest.raises(RuntimeError):
        with english.transaction():
            english.delete_documents([row[0] for row in english.db.execute("SELECT id FROM documents")])
            raise RuntimeError("interrupted")
    assert [(h.chunk.path, h.score) for h in BM25Retriever(english, "medium").search("router", 5)] == before


def make_fts5_index(index, docs: dict[str, str], *, without_fts_row: str | None = None) -> None:
    """An index as versions before the postings engine wrote it (BM25 terms in FTS5)."""
    import sqlite3

    import sqlite_utils

    from ragcli.store.directory import DATABASE_NAME
    from ragcli.store.local.migrations import migrations

    index.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(index / DATABASE_NAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")  # as every ragcli index is
    migrations.apply(sqlite_utils.Database(conn), stop_before="m007_bm25_postings")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO groups VALUES ('medium', 'word', 2000, 0, '')")
    conn.execute("CREATE VIRTUAL TABLE fts_medium USING fts5(tokens)")
    for i, (name, text) in enumerate(docs.items(), start=1):
        conn.execute("INSERT INTO documents (id, path, content_hash) VALUES (?, ?, '')", [i, name])
        conn.execute(
            'INSERT INTO chunks (id, doc_id, group_name, ord, text, start, "end", hash) '
            "VALUES (?, ?, 'medium', 0, ?, 0, ?, '')",
            [i, i, text, len(text)],
        )
        if name != without_fts_row:
            conn.execute("INSERT INTO fts_medium (rowid, tokens) VALUES (?, ?)", [i, term_string(text)])
    conn.execute("COMMIT")
    conn.close()


def test_an_fts5_index_from_an_earlier_version_is_migrated(isolated_home):
    """Every chunk becomes findable, even one its FTS table lacked; scores equal rank-bm25's."""
    make_fts5_index(isolated_home, ENGLISH, without_fts_row="wifi")
    store = Store.open(isolated_home)
    try:
        assert not store.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'fts_medium'").fetchone()
        bm25, paths = reference(store)
        expected = dict(zip(paths, bm25.get_scores(index_terms("router modem reset"))))
        hits = BM25Retriever(store, "medium").search("router modem reset", 5)
        assert hits[0].chunk.path == "router"
        for hit in hits:
            assert hit.score == expected[hit.chunk.path]
        assert BM25Retriever(store, "medium").search("microwaves gigahertz", 1)[0].chunk.path == "wifi"
    finally:
        store.close()


def test_processes_opening_an_old_index_together_all_succeed(isolated_home):
    """Right after an upgrade, one process migrates; the others wait and find it done."""
    import subprocess
    import sys

    docs = {f"{name}-{i}": text for i in range(1500) for name, text in ENGLISH.items()}
    make_fts5_index(isolated_home, docs)
    code = (
        "import sys; from pathlib import Path; from ragcli.store.local.database import Store; "
        "s = Store.open(Path(sys.argv[1])); print(s.db.execute('SELECT sum(docs) FROM bm25_segments')"
        ".fetchone()[0]); s.close()"
    )
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(isolated_home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [opener.communicate(timeout=120) for opener in openers]
    assert [opener.returncode for opener in openers] == [0, 0, 0], [err for _, err in results]
    assert [out.strip() for out, _ in results] == [str(1500 * len(ENGLISH))] * 3


def test_ties_resolve_by_chunk_id_on_both_accumulators():
    """Dense (id range) and sparse (sorted ids) accumulation give the same best-first list."""
    import numpy as np

    from ragcli.store.local.postings_reader import _best

    ids = np.array([5, 3, 9, 3, 7, 5], dtype=np.int64)
    partial = np.array([1.0, 0.5, 2.0, 0.5, 1.0, 0.0])
    assert _best(ids, partial, 3, None) == [(9, 2.0), (3, 1.0), (5, 1.0)]
    sparse = ids * 10_000_000  # an id range too wide for a dense accumulator
    assert _best(sparse, partial, 3, None) == [(90_000_000, 2.0), (30_000_000, 1.0), (50_000_000, 1.0)]
    assert _best(ids, partial, 10, np.array([3, 7])) == [(3, 1.0), (7, 1.0)]
    assert _best(ids, partial, 10, np.array([4])) == []


def test_a_reader_reusing_its_sums_ranks_like_a_fresh_accumulator():
    """Queries summed one after another in the reader's kept arrays (wider, narrower, from
    another origin) give `_best`'s list, bit for bit: nothing of one query leaks into the next."""
    import numpy as np

    from ragcli.store.local.postings_reader import PostingsReader, _best

    rng = np.random.default_rng(7)
    reader = PostingsReader()
    for trial in range(60):
        origin = int(rng.choice([0, 1, 5_000]))
        span = int(rng.choice([20, 300, 5_000]))
        parts = []
        for _ in range(rng.integers(1, 6)):
            ids = np.sort(rng.choice(span, size=rng.integers(1, min(span, 400)), replace=False)) + origin
            scores = rng.choice([0.5, 1.25], size=len(ids)) if trial % 2 else rng.random(len(ids))
            parts.append((ids.astype(np.int64), scores, int(ids.min()), int(ids.max()), len(ids)))
        ids = np.concatenate([part[0] for part in parts])
        partial = np.concatenate([part[1] for part in parts])
        low, high = int(ids.min()), int(ids.max())
        start = 0 if low <= high - low else low
        probe = next((part[0] for part in parts if part[4] >= 3), None)
        for k in (1, 3, 50):
            found = reader._best_on_range(parts, start, high - start + 1, len(ids), k, probe)
            assert found == _best(ids, partial, k, None), (trial, k)


def test_ascii_text_is_analysed_like_any_text():
    """ASCII text takes a shorter path (no CJK runs, nothing to fold): the same terms as the
    general path, which one accented word at the end forces."""
    from ragcli.analysis import analyze

    samples = [*ENGLISH.values(), *QUERIES, "snake_case v1.2 x86_64 --foo", "A1 b2 _c_ 3d THE Lamps"]
    for text in samples:
        assert analyze(text + " \u00e9") == analyze(text) + ["e"], text


def test_a_query_scored_without_numpy_equals_the_numpy_scorer(isolated_home, monkeypatch):
    """A new process's first query is scored in plain Python (numpy not imported yet): the
    same (chunk id, score) pairs bit for bit, ties by chunk id, deleted chunks left out."""
    import numpy  # noqa: F401  (so that PostingsReader takes its numpy path here)

    import ragcli.store.local.postings_reader as postings_reader
    from ragcli.store.local.postings_reader import PostingsReader, _top_k_in_python

    texts = {f"{name}-{i}": f"{text} Copy {i}." for i in range(6) for name, text in ENGLISH.items()}
    documents = [Document(path=name, text=text, file_type="txt") for name, text in texts.items()]
    ingest_documents(isolated_home, documents, embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    store = Store.open(isolated_home)
    try:
        with store.transaction():
            gone = store.db.execute("SELECT id FROM documents WHERE path LIKE 'router-%'").fetchall()
            store.delete_documents([doc_id for (doc_id,) in gone])
        assert store.db.execute("SELECT count(*) FROM bm25_deleted").fetchone()[0]  # marks, not rewrites
        some = [row[0] for row in store.db.execute("SELECT id FROM chunks WHERE id % 3 = 0")]
        for query in QUERIES + ["router reset button", "copy", "lamp lamp beam", "no such word"]:
            terms = index_terms(query)
            for k in (1, 3, 999):
                for allowed in (None, some):
                    expected = PostingsReader().top_k(store.db, "medium", terms, k, allowed)
                    assert _top_k_in_python(store.db, "medium", terms, k, allowed) == expected, (query, k)
        monkeypatch.setattr(postings_reader, "PYTHON_POSTINGS", 5)  # too many postings: numpy's turn
        assert _top_k_in_python(store.db, "medium", index_terms("copy"), 3) is None
    finally:
        store.close()


def test_a_query_reads_one_committed_state_while_another_connection_writes(english, isolated_home):
    """WAL: a writer commits between the query's statements; the query still sees one state."""
    writer = Store.open(isolated_home)
    retriever = BM25Retriever(english, "medium")
    expected = [(h.chunk.path, h.score) for h in retriever.search("router reset", 5)]
    try:
        with english.snapshot():
            assert [(h.chunk.path, h.score) for h in retriever.search("router reset", 5)] == expected
            with writer.transaction():
                writer.delete_documents([row[0] for row in writer.db.execute("SELECT id FROM documents")])
            assert [(h.chunk.path, h.score) for h in retriever.search("router reset", 5)] == expected
        assert retriever.search("router reset", 5) == []
    finally:
        writer.close()


def test_bm25_hits_equal_hits_made_through_the_dataclass(english):
    """`Hit.ranked` skips the frozen dataclass's `__init__`: every field it sets, and no other."""
    from dataclasses import fields

    from ragcli.types import Hit

    hits = BM25Retriever(english, "medium").search("router reset", 5)
    assert hits
    for hit in hits:
        assert hit == Hit(hit.chunk, hit.score, hit.rank)
        assert set(vars(hit)) == {field.name for field in fields(Hit)}
