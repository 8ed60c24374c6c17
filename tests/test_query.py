"""The query core: modes, fusion, filters, cut-offs and errors, with the hashing fake embedder."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fakes import HashEmbedder
from ragcli.config import load_settings
from ragcli.errors import IndexMismatch, NotIndexed, UnknownFilter, UnknownGroup, UsageError
from ragcli.ingest.pipeline import ingest, ingest_documents
from ragcli.retrieval.search import QueryOptions, Searcher
from ragcli.retrieval.filters import filters_sql, matches, parse_condition, parse_filters
from ragcli.retrieval.fusion import GAP_BOOST, fuse_hits, normalise, rrf, score_fusion
from ragcli.store.local.database import Store
from ragcli.types import Chunk, ChunkSettings, Document, Hit

WHOLE = ChunkSettings("word", 2000, 0)

DOCS = [
    Document(
        "/notes/router.md",
        "To reset the router, hold the button on the back for ten seconds until the lights blink.",
        "md",
        {"modified": "2024-03-05T10:00:00+00:00", "author": "ann", "tags": ["net", "home"]},
    ),
    Document(
        "/notes/wifi.txt",
        "If the wireless network is slow, move the router away from walls and microwaves.",
        "txt",
        {"modified": "2024-11-20T08:00:00+00:00", "author": "bob", "tags": ["net"]},
    ),
    Document(
        "/papers/lighthouse.pdf",
        "The lighthouse lamp was lit every evening; its beam warned ships away from the rocks.",
        "pdf",
        {
            "modified": "2023-06-01T00:00:00+00:00",
            "author": "ann",
            "title": "Lighthouses",
            "reviewed": True,
            "year": 1999,
        },
    ),
    Document(
        "/papers/fresnel.pdf",
        "Fresnel designed a lens of glass prisms that bent the lamp light into a beam seen far out at sea.",
        "pdf",
        {"modified": "2025-01-01T00:00:00+00:00", "author": "cy", "title": "Lens design", "year": 2001},
    ),
    Document(
        "/notes/tea.md",
        "Green tea leaves are steamed soon after picking, which stops oxidation.",
        "md",
        {"modified": "2024-12-31T23:00:00+00:00"},
    ),
    Document(
        "/notes/tea-copy.md",
        "Green tea leaves are steamed soon after picking, which stops oxidation.",
        "md",
        {"modified": "2022-01-01T00:00:00+00:00", "author": "bob"},
    ),
]


@pytest.fixture
def fake_models(monkeypatch):
    """`embedder_for` returns the hashing fake; counts how often a model is loaded."""
    loads = []

    def embedder_for(settings, index_model=None, **kwargs):
        loads.append(index_model)
        return HashEmbedder()

    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", embedder_for)
    return loads


@pytest.fixture
def searcher(isolated_home, fake_models):
    ingest_documents(isolated_home, DOCS, embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    with Searcher(isolated_home, settings=load_settings()) as opened:
        yield opened


def paths(hits) -> list[str]:
    return [hit.chunk.path for hit in hits]


# -- fusion (pure) ---------------------------------------------------------------------------
def test_rrf_matches_the_formula():
    fused = dict(rrf({"a": ["x", "y", "z"], "b": ["y", "w"]}, k=60))
    assert fused["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["x"] == pytest.approx(1 / 61)
    assert fused["w"] == pytest.approx(1 / 62)
    assert [item for item, _ in rrf({"a": ["x", "y", "z"], "b": ["y", "w"]})] == ["y", "x", "w", "z"]


def test_rrf_weights_and_deterministic_ties():
    fused = rrf({"a": ["x"], "b": ["y"]}, k=10, weights={"a": 1.0, "b": 2.0})
    assert fused == [("y", pytest.approx(2 / 11)), ("x", pytest.approx(1 / 11))]
    assert [i for i, _ in rrf({"a": ["x"], "b": ["y"]})] == ["x", "y"]  # a tie keeps first-seen order


def test_score_fusion_normalises_and_combines():
    assert normalise([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert normalise([5.0, 5.0]) == [1.0, 1.0]
    assert normalise([1.0, 3.0], "zscore") == [-1.0, 1.0]
    fused = dict(
        score_fusion(
            {"bm25": [("x", 10.0), ("y", 5.0)], "dense": [("y", 0.9), ("z", 0.1)]},
            weights={"bm25": 1.0, "dense": 3.0},
        )
    )
    assert fused == {"x": pytest.approx(0.25), "y": pytest.approx(0.75), "z": pytest.approx(0.0)}


def test_fuse_hits_keeps_each_retrievers_rank_and_score():
    chunk = lambda i: Chunk(i, i, "g", 0, f"t{i}", 0, 1, None, f"p{i}")  # noqa: E731
    results = {"bm25": [Hit(chunk(1), 7.5), Hit(chunk(2), 3.0)], "dense": [Hit(chunk(2), 0.8)]}
    fused = fuse_hits(results, fusion="rrf")
    assert [(h.chunk.id, h.rank) for h in fused] == [(2, 1), (1, 2)]
    assert fused[0].sources == {
        "bm25": {"rank": 2, "score": 3.0, "weight": 0.5},
        "dense": {"rank": 1, "score": 0.8, "weight": 0.5},
    }
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1].sources == {"bm25": {"rank": 1, "score": 7.5, "weight": 0.5}}
    adaptive = fuse_hits(results)  # the default: both lists short (full spread), so priors x top gaps
    bm25, dense = 0.2 * (1 + GAP_BOOST * 0.6), 0.8 * (1 + GAP_BOOST * 1.0)  # gaps (7.5-3)/7.5 and 1
    weight = dense / (bm25 + dense)
    assert [(h.chunk.id, h.rank) for h in adaptive] == [(2, 1), (1, 2)]
    assert adaptive[0].sources["dense"]["weight"] == pytest.approx(weight, abs=1e-4)
    assert adaptive[0].score == pytest.approx((1 - weight) * 3.0 / 7.5 + weight)
    assert adaptive[1].score == pytest.approx(1 - weight)  # absent from a short dense list: 0 there


# -- filters (pure and SQL agree) ----------------------------------------------------------------
def test_parse_filters_and_conditions():
    assert parse_filters(["file_type=pdf", "file_type=md", "author = ann"]) == {
        "file_type": ("pdf", "md"),
        "author": ("ann",),
    }
    assert parse_condition(">=2024-01-01") == parse_condition(">= 2024-01-01")
    assert parse_condition("<2025").op == "<" and parse_condition("a=b").op == "="
    with pytest.raises(UsageError, match="key=value"):
        parse_filters(["file_type"])


FILTER_CASES = [
    ({"file_type": ("pdf",)}, {"lighthouse.pdf", "fresnel.pdf"}),
    ({"file_type": (".PDF", "txt")}, {"lighthouse.pdf", "fresnel.pdf", "wifi.txt"}),
    ({"path": ("/notes/*",), "author": ("bob",)}, {"wifi.txt", "tea-copy.md"}),
    ({"path": ("*tea*",)}, {"tea.md", "tea-copy.md"}),
    ({"modified": (">=2024-01-01", "<2025-01-01")}, {"router.md", "wifi.txt", "tea.md"}),
    ({"modified": ("<=2024-12-31",)}, {"router.md", "wifi.txt", "tea.md", "lighthouse.pdf", "tea-copy.md"}),
    ({"modified": ("2024-03-05",)}, {"router.md"}),
    ({"tags": ("home",)}, {"router.md"}),
    ({"tags": ("net",), "author": ("bob", "cy")}, {"wifi.txt"}),
    ({"author": ("!=ann",)}, {"wifi.txt", "fresnel.pdf", "tea.md", "tea-copy.md"}),
    ({"title": ("Lighthouses",)}, {"lighthouse.pdf"}),
    ({"year": (">=2000",)}, {"fresnel.pdf"}),
    # Stored numbers compare as numbers: as text "1999" < "900" and "2001" > "10000".
    ({"year": (">=900",)}, {"lighthouse.pdf", "fresnel.pdf"}),
    ({"year": ("<10000", ">1999.5")}, {"fresnel.pdf"}),
    ({"reviewed": ("1",)}, {"lighthouse.pdf"}),
    # A stored boolean is also matched by true/false (`ocr=true`), which matched nothing.
    ({"reviewed": ("true",)}, {"lighthouse.pdf"}),
    ({"reviewed": ("TRUE", "false")}, {"lighthouse.pdf"}),
    ({"reviewed": ("false",)}, set()),
    ({"reviewed": ("!=true",)}, {"router.md", "wifi.txt", "fresnel.pdf", "tea.md", "tea-copy.md"}),
    ({"file_name": ("tea.md", "wifi.txt")}, {"tea.md", "wifi.txt"}),
]


@pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
def test_filters_in_sql_and_python_agree(searcher, filters, expected):
    where, params = filters_sql(filters)
    rows = searcher.store.db.execute(f"SELECT d.path FROM documents d WHERE {where}", params).fetchall()
    assert {Path(p).name for (p,) in rows} == expected
    in_python = {
        Path(c.path).name
        for c in searcher.store.chunks(list(range(1, 20))).values()
        if matches(filters, {**c.metadata, "path": c.path})
    }
    assert in_python == expected


def test_filters_restrict_every_mode(searcher):
    for mode in ("bm25", "dense", "hybrid"):
        options = QueryOptions(mode=mode, filters={"file_type": ("pdf",)})
        hits = searcher.search("lamp beam tea router", options)
        assert hits and set(paths(hits)) <= {"/papers/lighthouse.pdf", "/papers/fresnel.pdf"}, mode


def test_dense_filter_separates_chunks_sharing_one_embedding(searcher):
    # tea.md and tea-copy.md have identical text, so they share a single vector.
    both = searcher.search("green tea leaves", QueryOptions(mode="dense", top_k=2))
    assert set(paths(both)) == {"/notes/tea.md", "/notes/tea-copy.md"}
    assert both[0].score == pytest.approx(both[1].score)
    only = searcher.search("green tea leaves", QueryOptions(mode="dense", filters={"author": ("bob",)}))
    assert "/notes/tea.md" not in paths(only) and paths(only)[0] == "/notes/tea-copy.md"


def test_unknown_filter_key_names_it_and_lists_known_keys(searcher):
    with pytest.raises(UnknownFilter) as error:
        searcher.search("router", QueryOptions(filters={"colour": ("red",)}))
    message = str(error.value)
    assert "'colour'" in message and "author" in message and "file_type" in message and "tags" in message


# -- modes and cut-offs ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_modes_find_the_right_passage(searcher, mode):
    hits = searcher.search("reset the router button", QueryOptions(mode=mode, top_k=3))
    assert paths(hits)[0] == "/notes/router.md"
    assert [h.rank for h in hits] == [1, 2, 3][: len(hits)]
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_hybrid_hits_explain_their_sources(searcher):
    default = searcher.search("lighthouse lamp", QueryOptions(mode="hybrid", top_k=3))
    assert set(default[0].sources) == {"bm25", "dense"} and 0 < default[0].score <= 1
    weights = {name: part["weight"] for name, part in default[0].sources.items()}
    assert sum(weights.values()) == pytest.approx(1, abs=1e-3)
    hits = searcher.search("lighthouse lamp", QueryOptions(mode="hybrid", top_k=3, fusion="rrf"))
    top = hits[0]
    assert set(top.sources) == {"bm25", "dense"}
    expected = sum(1 / (60 + part["rank"]) for part in top.sources.values())
    assert top.score == pytest.approx(expected)
    weighted = searcher.search(
        "lighthouse lamp", QueryOptions(mode="hybrid", weights=(2.0, 0.0), rrf_k=10, fusion="rrf")
    )
    assert weighted[0].score == pytest.approx(2 / (10 + weighted[0].sources["bm25"]["rank"]))
    scored = searcher.search("lighthouse lamp", QueryOptions(mode="hybrid", fusion="score"))
    assert 0 < scored[0].score <= 1


def test_default_hybrid_searches_dense_again_from_the_best_fused_hit(searcher, monkeypatch):
    from ragcli.retrieval.dense import DenseRetriever

    calls = []
    original = DenseRetriever.search_feedback

    def spy(self, vector, feedback, *args, **kwargs):
        calls.append(feedback)
        return original(self, vector, feedback, *args, **kwargs)

    monkeypatch.setattr(DenseRetriever, "search_feedback", spy)
    hits = searcher.search("lighthouse lamp", QueryOptions(mode="hybrid", top_k=3))
    one_pass = searcher.search("lighthouse lamp", QueryOptions(mode="hybrid", top_k=3, fusion="score"))
    assert len(calls) == 1 and len(calls[0]) == 1  # one feedback chunk, one extra search; score fusion: none
    assert hits and one_pass and all(0 <= hit.score <= 1 for hit in hits)
    assert searcher.search("lighthouse lamp", QueryOptions(mode="hybrid", weights=(1.0, 0.0)))  # dense off
    assert len(calls) == 1


def test_top_k_min_score_require_exclude(searcher):
    assert len(searcher.search("the lamp and the router", QueryOptions(mode="bm25", top_k=2))) == 2
    everything = searcher.search("lamp router tea", QueryOptions(mode="bm25"))
    cut = everything[1].score
    kept = searcher.search("lamp router tea", QueryOptions(mode="bm25", min_score=cut))
    assert kept and all(h.score >= cut for h in kept) and len(kept) < len(everything)


@pytest.mark.skipif(
    importlib.util.find_spec("ragcli.retrieval.rerank") is None,
    reason="ragcli.retrieval.rerank not written yet",
)
def test_require_and_exclude_filter_hits(searcher):
    required = searcher.search("lamp router", QueryOptions(mode="hybrid", require=("BEAM",)))
    assert required and all("beam" in h.chunk.text.lower() for h in required)
    excluded = searcher.search("lamp router", QueryOptions(mode="hybrid", exclude=("prisms",)))
    assert "/papers/fresnel.pdf" not in paths(excluded)


def test_queries_without_terms_find_nothing_in_bm25(searcher):
    assert searcher.search("the of and", QueryOptions(mode="bm25")) == []


def test_model_loads_once_per_searcher_and_not_for_bm25(searcher, fake_models):
    searcher.search("router", QueryOptions(mode="bm25"))
    assert fake_models == []
    for query in ("router", "tea", "lamp"):
        searcher.search(query, QueryOptions(mode="hybrid"))
    assert fake_models == ["fake-hash-64"]


# -- errors ----------------------------------------------------------------------------------------
def test_no_index(isolated_home):
    with pytest.raises(NotIndexed, match="rag ingest"):
        Searcher(isolated_home, settings=load_settings())


def test_empty_index(isolated_home, fake_models, tmp_path):
    Store.create(isolated_home).close()
    with Searcher(isolated_home, settings=load_settings()) as searcher:
        with pytest.raises(NotIndexed, match="empty"):
            searcher.search("router")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("something to index")
    ingest(isolated_home, [folder], embedder=HashEmbedder(), chunking=WHOLE)
    (folder / "a.txt").unlink()
    ingest(isolated_home, [folder], embedder=HashEmbedder(), chunking=WHOLE)  # prunes it again
    with Searcher(isolated_home, settings=load_settings()) as searcher:
        with pytest.raises(NotIndexed, match="empty"):
            searcher.search("router")


def test_an_open_searcher_sees_groups_change_under_it(searcher, isolated_home):
    """Resolved groups are remembered only while the database is unchanged: a group another
    connection adds is found, an index it empties is said to be empty."""
    bm25 = QueryOptions(mode="bm25")
    assert "/notes/router.md" in paths(searcher.search("router", bm25))
    with pytest.raises(UnknownGroup):
        searcher.search("router", QueryOptions(mode="bm25", group="fine"))
    fine = ChunkSettings("word", 8, 0)
    ingest_documents(isolated_home, DOCS[:1], embedder=HashEmbedder(), group="fine", chunking=fine)
    assert paths(searcher.search("router", QueryOptions(mode="bm25", group="fine"))) == ["/notes/router.md"]
    writer = Store.open(isolated_home)
    with writer.transaction():
        writer.delete_documents([doc_id for (doc_id,) in writer.db.execute("SELECT id FROM documents")])
    writer.close()
    with pytest.raises(NotIndexed, match="empty"):
        searcher.search("router", bm25)
    with pytest.raises(NotIndexed, match="empty"):
        searcher.search_many(["router"], bm25)


def test_unknown_group_lists_the_known_ones(searcher):
    with pytest.raises(UnknownGroup, match="medium"):
        searcher.search("router", QueryOptions(group="fine"))


def test_model_mismatch(isolated_home, monkeypatch):
    ingest_documents(isolated_home, DOCS, embedder=HashEmbedder(), group="medium", chunking=WHOLE)
    monkeypatch.setattr(
        "ragcli.generation.chooser.embedder_for", lambda settings, model=None, **kw: HashEmbedder(32)
    )
    with Searcher(isolated_home, settings=load_settings()) as searcher:
        assert searcher.search("router", QueryOptions(mode="bm25"))  # BM25 needs no model
        with pytest.raises(IndexMismatch, match="rebuild"):
            searcher.search("router", QueryOptions(mode="dense"))


@pytest.mark.parametrize(
    "options",
    [
        QueryOptions(mode="fuzzy"),
        QueryOptions(top_k=0),
        QueryOptions(weights=(0.0, 0.0)),
        QueryOptions(fusion="max"),
        QueryOptions(rerank="magic"),
    ],
)
def test_bad_options_are_usage_errors(searcher, options):
    with pytest.raises(UsageError):
        searcher.search("router", options)


# -- hooks owned by the llm/rerank module ------------------------------------------------------------
@pytest.mark.skipif(
    importlib.util.find_spec("ragcli.retrieval.rerank") is None,
    reason="ragcli.retrieval.rerank not written yet",
)
def test_keyword_rerank_hook_returns_ranked_hits(searcher):
    hits = searcher.search(
        "lamp router", QueryOptions(mode="hybrid", rerank="keyword", require=("lamp",), top_k=3)
    )
    assert hits and [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all("lamp" in h.chunk.text for h in hits)


# -- the real default embedding model (ONNX) -------------------------------------------------------
@pytest.fixture(scope="module")
def real_index(corpus_index):
    """The fixture documents (English, Chinese, PDF, DOCX) ingested once with the real model."""
    return corpus_index("docs").index


@pytest.mark.slow
def test_real_model_dense_and_hybrid_queries(real_index, model_cache_dir):
    settings = load_settings(index=real_index, cache_dir=model_cache_dir)
    with Searcher(real_index, settings=settings) as searcher:
        question = "how long should the loaf bake in the oven?"
        dense = searcher.search(question, QueryOptions(mode="dense", top_k=3))
        assert Path(dense[0].chunk.path).name == "bread_baking.md"
        assert 0.3 < dense[0].score <= 1.0  # a cosine similarity
        chinese = searcher.search("长城在哪里", QueryOptions(mode="hybrid", top_k=3))
        assert Path(chinese[0].chunk.path).name == "great_wall.md"
        assert set(chinese[0].sources) == {"bm25", "dense"}
