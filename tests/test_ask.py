"""The ask pipeline's logic with a fake embedder (HashEmbedder) and a fake model (EchoGenerator)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from fakes import EchoGenerator, HashEmbedder, ScriptedGenerator
from ragcli.answer.ask import Asker
from ragcli.answer.options import AskOptions
from ragcli.answer.result import Answer
from ragcli.answer.stages import Pipeline, relevant_hits
from ragcli.config import load_settings
from ragcli.answer.context import ContextTooSmall
from ragcli.errors import ModelNotFound
from ragcli.ingest.pipeline import ingest
from ragcli.generation.llama import TEMPLATE_MARGIN
from ragcli.answer.prompting import NOT_FOUND, grounded_prompt, prompt_overhead
from ragcli.retrieval.search import QueryOptions, Searcher
from ragcli.retrieval.rewrite import parse_queries
from ragcli.types import Chunk, ChunkSettings, Hit

WORDS = ChunkSettings("word", 12, 3)
BREAD = (
    "Sourdough bread needs flour, water, salt and a lively starter. The dough rests overnight "
    "in a cool place. Bake it at a high heat in a covered pot for forty minutes."
)
TEA = "Green tea is steamed or pan fired soon after picking, which stops oxidation of the leaves."
CAFE = "Les cafés de Vienne servent le café avec un verre d'eau. Müller's café is in Wien."


@pytest.fixture
def embedder(monkeypatch):
    fake = HashEmbedder(dimension=512)  # few hash collisions: unrelated texts score ~0
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    return fake


@pytest.fixture
def corpus(tmp_path, isolated_home, embedder) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "bread.md").write_text(BREAD)
    (root / "tea.txt").write_text(TEA)
    (root / "cafe.txt").write_text(CAFE)
    ingest(isolated_home, [root], embedder=embedder, group="medium", chunking=WORDS)
    return root


def make_asker(index, generator=None, **kwargs) -> Asker:
    return Asker(index, settings=load_settings(), generator=generator or EchoGenerator(), **kwargs)


# These tests exercise the generative path (the model writes the answer); see test_extractive.py.
BM25 = AskOptions(query=QueryOptions(mode="bm25", top_k=5), answer_style="generative")


def test_answer_cites_a_numbered_source_mapped_to_path(corpus, isolated_home):
    with make_asker(isolated_home) as asker:
        answer = asker.ask("How long does sourdough bread bake?", BM25)
    assert not answer.abstained and answer.citations == (1,)
    assert answer.source(1).path.endswith("bread.md")
    assert answer.text.endswith("[1].") and not answer.citations_inferred
    assert set(answer.timings) >= {"retrieve", "rerank", "prompt", "first_token", "total"}
    assert answer.tokens["completion"] > 0 and answer.tokens["prompt"] > 0
    assert answer.retrieved and all(isinstance(h, Hit) for h in answer.retrieved)


def test_adjacent_chunks_of_a_document_are_merged_into_one_source(corpus, isolated_home):
    with make_asker(isolated_home) as asker:
        answer = asker.ask("sourdough dough bake starter overnight pot", BM25)
    bread = [s for s in answer.sources if s.path.endswith("bread.md")]
    assert len(bread) == 1 and len(bread[0].chunk_ids) > 1
    assert bread[0].text == BREAD  # every window of the file, overlaps written once


def test_stream_yields_pieces_then_the_answer(corpus, isolated_home):
    with make_asker(isolated_home) as asker:
        items = list(asker.stream("green tea oxidation", BM25))
    pieces, final = items[:-1], items[-1]
    assert isinstance(final, Answer) and len(pieces) > 2
    assert "".join(pieces).strip() == final.text


def test_nothing_relevant_abstains_without_calling_the_model(corpus, isolated_home):
    generator = EchoGenerator()
    with make_asker(isolated_home, generator) as asker:
        answer = asker.ask("quantum chromodynamics gluon", AskOptions(query=QueryOptions(mode="dense")))
    assert answer.abstained and answer.text == NOT_FOUND
    assert answer.sources == () and answer.citations == ()
    assert generator.calls == []


def test_model_saying_not_found_is_marked_abstained(corpus, isolated_home):
    generator = EchoGenerator(reply="The sources do not contain this.")
    with make_asker(isolated_home, generator) as asker:
        answer = asker.ask("green tea price", BM25)
    assert answer.abstained and answer.citations == () and answer.sources


def test_invalid_citations_are_removed_and_reported(corpus, isolated_home):
    generator = EchoGenerator(reply="Green tea is steamed [1]. It is from Mars [7].")
    with make_asker(isolated_home, generator) as asker:
        answer = asker.ask("green tea", BM25)
    assert answer.citations == (1,) and answer.invalid_citations == (7,)
    assert "[7]" not in answer.text


def test_uncited_answer_gets_its_evidence_quoted_and_cited_under_it(corpus, isolated_home):
    generator = EchoGenerator(reply="Green tea is steamed or pan fired. Jupiter is big.")
    with make_asker(isolated_home, generator) as asker:
        answer = asker.ask("green tea steamed", BM25)
    reply, *quoted = answer.text.split("\n")
    assert reply == "Green tea is steamed or pan fired. Jupiter is big."
    assert quoted and all(line.startswith('"') and line.endswith("[1]") for line in quoted)
    assert answer.citations == (1,) and answer.source(1).path.endswith("tea.txt")
    assert [(s.label, s.source) for s in answer.support[:2]] == [("supported", 1), ("unsupported", None)]


def test_support_annotation_stage_can_be_skipped(corpus, isolated_home):
    with make_asker(isolated_home, pipeline=replace(Pipeline(), annotate=None)) as asker:
        answer = asker.ask("green tea", BM25)
    assert answer.support == () and answer.citations == (1,)


def test_budget_from_model_context_and_too_small_error(corpus, isolated_home):
    question = "sourdough bread green tea cafe"
    ungated = replace(Pipeline(), evidence_gate=None)  # a question spanning topics: let it through
    with make_asker(isolated_home, EchoGenerator(n_ctx=2048), pipeline=ungated) as asker:
        roomy = asker.ask(question, replace(BM25, max_tokens=16))
    # 50 tokens for the sources and the answer, besides the prompt's rule and worked examples
    overhead = prompt_overhead(grounded_prompt, question, EchoGenerator().count_tokens)
    small = EchoGenerator(n_ctx=overhead + 50 + TEMPLATE_MARGIN)
    with make_asker(isolated_home, small, pipeline=ungated) as asker:
        tight = asker.ask(question, replace(BM25, max_tokens=16))
        prompt = sum(small.count_tokens(m["content"]) for m in small.calls[-1][0])
        assert prompt <= overhead + 50 - 16
        assert 0 < sum(len(s.text) for s in tight.sources) < sum(len(s.text) for s in roomy.sources)
        with pytest.raises(ContextTooSmall, match="raise --ctx"):
            asker.ask("sourdough bread", replace(BM25, max_tokens=50, use_cache=False))


def test_cache_hit_miss_and_invalidation_by_ingest(corpus, isolated_home, embedder):
    generator = EchoGenerator()
    with make_asker(isolated_home, generator) as asker:
        first = asker.ask("green tea oxidation", BM25)
        again = asker.ask("green  tea oxidation", BM25)
        assert not first.cached and again.cached and len(generator.calls) == 1
        assert again.text == first.text and again.sources == first.sources and again.support == first.support
        assert not asker.ask("green tea oxidation", replace(BM25, max_tokens=20)).cached
        assert not asker.ask("green tea oxidation", replace(BM25, use_cache=False)).cached
        (corpus / "new.txt").write_text("Black tea is fully oxidised.")
        ingest(isolated_home, [corpus], embedder=embedder, group="medium", chunking=WORDS)
        after = asker.ask("green tea oxidation", BM25)
        assert not after.cached and len(generator.calls) == 4


def test_missing_model_fails_before_retrieval(corpus, isolated_home, tmp_path):
    asker = Asker(isolated_home, settings=load_settings())
    with pytest.raises(ModelNotFound, match="does not exist"):
        asker.ask("green tea", replace(BM25, model=str(tmp_path / "none.gguf")))
    asker.close()


def test_multi_rewrite_fuses_the_alternative_queries(corpus, isolated_home):
    def reply(messages):
        if "different search queries" in messages[-1]["content"]:
            return '1. leaves oxidation\n2. "pan fired leaves"\n3. green tea'
        return "Green tea is steamed [1]."

    with make_asker(isolated_home, EchoGenerator(reply=reply)) as asker:
        answer = asker.ask("green tea", replace(BM25, rewrite="multi"))
    assert answer.retrieved[0].chunk.path.endswith("tea.txt")
    found_by = {name for hit in answer.retrieved for name in hit.sources}
    assert {"question", "rewrite1", "rewrite2"} <= found_by


def test_hyde_searches_the_dense_side_with_a_hypothetical_passage(corpus, isolated_home, embedder):
    passage = "Steamed green tea leaves stop oxidation."
    generator = EchoGenerator(reply=lambda m: passage if "short passage" in m[-1]["content"] else "Tea [1].")
    with make_asker(isolated_home, generator) as asker:
        answer = asker.ask("green tea", replace(BM25, rewrite="hyde"))
    assert passage in embedder.embedded_texts
    assert "hyde" in answer.retrieved[0].sources


def test_parse_queries_strips_markers_and_repeats():
    text = 'Here:\n1. bread baking time\n- "bread baking time"\n* Query 3: oven heat\nhow long to bake bread?'
    assert parse_queries(text, "How long to bake bread?", 5) == ["Here:", "bread baking time", "oven heat"]


def test_relevance_gate_uses_content_words_and_dense_score():
    def make(text, dense=None):
        sources = {"dense": {"rank": 1, "score": dense}} if dense is not None else {}
        return Hit(Chunk(1, 1, "medium", 0, text, 0, len(text), None, "a.md"), 1.0, 1, sources)

    hits = [make("What is this about?"), make("Bread rises.", 0.1), make("Unrelated words", 0.5)]
    kept = relevant_hits(["What is bread about?"], hits)
    assert [h.chunk.text for h in kept] == ["Bread rises.", "Unrelated words"]


def test_generate_stage_is_replaceable_and_cached_apart(corpus, isolated_home):
    """An extractive stage (no model text at all) plugs in where generation was."""

    def extractive(generator, messages, options):
        yield "Green tea is steamed or pan fired [1]."

    generator = EchoGenerator(reply="unused")
    with make_asker(isolated_home, generator) as asker:
        plain = asker.ask("green tea", BM25)
    with make_asker(isolated_home, generator, pipeline=replace(Pipeline(), generate=extractive)) as asker:
        answer = asker.ask("green tea", BM25)
    assert not answer.cached and answer.text == "Green tea is steamed or pan fired [1]."
    assert answer.support[0].label == "supported" and plain.text.startswith("unused")


def test_a_question_naming_what_no_document_mentions_abstains(corpus, isolated_home):
    evidence = AskOptions(query=QueryOptions(mode="bm25", top_k=5), answer_style="evidence")
    with make_asker(isolated_home) as asker:
        unknown = asker.ask("How long does sourdough bread bake in a Breville oven?", evidence)
        known = asker.ask("Does Müller's café serve sourdough bread?", evidence)  # a name in a document
    assert unknown.abstained and unknown.text == NOT_FOUND
    assert not known.abstained


def test_the_names_of_a_question_are_its_capitalised_words_inside_a_sentence():
    from ragcli.answer.unknown import question_names

    names = question_names("How do I set up Acme Cloud? Does Bob's team at the V&A use it?")
    assert names == ["Acme Cloud", "Bob", "V&A"]  # a single letter ("A" of "V&A") is no name
    # an environment variable is the user's own setting, not a name the documents must hold
    assert question_names("Can I keep the index under $HOME or ${XDG_DATA_HOME} or %APPDATA%?") == []


def test_coined_words_are_lower_case_words_cut_into_pieces_and_slips_are_known():
    from ragcli.answer.unknown import coined_words, misspells

    def pieces(word):  # as a WordPiece vocabulary cuts them
        return {"webpack": 2, "summarize": 3, "gitsubmodules": 5, "git": 2, "txt": 2}.get(word, 1)

    assert coined_words("how do I configure webpack for the browser?", pieces) == ["webpack"]
    # a request for a summary and a document's file name are not what the pages must name
    assert coined_words("summarize the gitsubmodules manual", pieces) == []
    assert coined_words("what is the gitsubmodules.txt file for?", pieces) == []
    assert coined_words("Webpack and Git, with git", pieces) == ["git"]  # capitalised: a name
    assert misspells("cynaobacteria", {"cyanobacteria"}) and misspells("consts", {"consists"})
    assert not misspells("conda", {"conf"})  # two edits in five letters
    assert not misspells("deb", {"dep"}) and not misspells("pypi", {"api"})  # short; first letter


def test_an_acronym_whose_words_stand_in_the_passages_is_a_known_name():
    from fakes import hits_for
    from ragcli.answer.unknown import spelled_out, unknown_names

    def search(query, options):
        return []  # the index holds no other passage

    question = "When did the UN hold its first assembly in London?"
    spelled = hits_for(["The United Nations held its first General Assembly in London in 1946."])
    assert unknown_names(question, spelled, search, QueryOptions(mode="bm25")) == []
    other = hits_for(["The union held its first assembly under new rules in London in 1946."])
    assert unknown_names(question, other, search, QueryOptions(mode="bm25")) == ["UN"]
    assert spelled_out("V&A", ["the Victoria and Albert Museum"])
    assert spelled_out("NFL", ["the National Football League"]) and not spelled_out("NFL", ["No Fun"])
    assert not spelled_out("London", ["Lots Of New Dogs Of Note"])  # not an acronym


def test_an_asker_given_a_searcher_selects_with_its_answer_model_and_leaves_it_open(corpus, isolated_home):
    """llm retrieval inside an answer uses the model the Asker answers with, not the searcher's
    own; closing the Asker does not close a searcher it did not open."""

    def searchers_own_model():
        raise AssertionError("the searcher's own model was asked to select")

    settings = load_settings()
    searcher = Searcher(isolated_home, settings=settings, generator_factory=searchers_own_model)
    answer_model = ScriptedGenerator(["1"])
    options = AskOptions(query=QueryOptions(mode="llm", top_k=2), answer_style="evidence", use_cache=False)
    with Asker(settings=settings, searcher=searcher, generator=answer_model) as asker:
        assert asker.searcher is searcher
        asker.ask("How is green tea made?", options)
    assert answer_model.calls  # the answer model chose the passages
    assert searcher.search("green tea", QueryOptions(mode="bm25", top_k=1))  # still open
    searcher.close()


def test_an_answer_cached_by_other_code_is_not_served(corpus, isolated_home, monkeypatch):
    import ragcli.answer.ask as ask_module

    with make_asker(isolated_home, EchoGenerator()) as asker:
        assert not asker.ask("green tea oxidation", BM25).cached
        assert asker.ask("green tea oxidation", BM25).cached
        monkeypatch.setattr(ask_module, "code_identity", lambda: "an upgraded ragcli")
        assert not asker.ask("green tea oxidation", BM25).cached


def test_the_cache_key_follows_ragclis_own_code(tmp_path):
    """An upgrade that answers differently must not be served the old version's answers."""
    from ragcli.answer.cache import code_identity

    package = tmp_path / "pkg"
    (package / "answer").mkdir(parents=True)
    module = package / "answer" / "evidence.py"
    module.write_text("BUDGET = 1000\n")
    before = code_identity(str(package))
    module.write_text("BUDGET = 1500\n")
    os.utime(module, ns=(1, 1))
    code_identity.cache_clear()
    assert code_identity(str(package)) != before
    assert code_identity() == code_identity()  # ragcli's own, taken once a process


def test_a_question_naming_a_document_searches_it_once(corpus, isolated_home, monkeypatch):
    searched = []
    search = Searcher.search

    def counting(self, query, options=QueryOptions(), **kwargs):
        searched.append(dict(options.filters))
        return search(self, query, options, **kwargs)

    monkeypatch.setattr(Searcher, "search", counting)
    with make_asker(isolated_home) as asker:
        answer = asker.ask("what does bread.md say about the dough?", replace(BM25, use_cache=False))
    kept = [filters for filters in searched if "path" in filters]
    assert len(kept) == 1  # the check that the document exists is the search itself
    assert {hit.chunk.path for hit in answer.retrieved} == {str(corpus / "bread.md")}
