"""Rerankers: keyword filter, local-LLM scoring, cross-encoder, and the `rerank` pipeline hook."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from fakes import ScriptedGenerator, hits_for

from ragcli.errors import ModelNotFound, UsageError
from ragcli.retrieval.search import QueryOptions
from ragcli.retrieval.rerank import (
    DIGIT_GRAMMAR,
    RERANKERS,
    CrossEncoderReranker,
    KeywordFilter,
    LLMReranker,
    order_by_scores,
    parse_relevance,
    rerank,
)

PARIS_TEXTS = [
    "The Eiffel Tower is in Paris and was finished in 1889.",
    "Octopuses have three hearts and blue blood.",
    "Paris is the capital of France.",
    "Photosynthesis turns light into chemical energy.",
    "Le café de Flore est à Paris.",
    "巴黎是法国的首都。",
]


def make_hits(texts=PARIS_TEXTS):
    return hits_for(texts)


# --- ordering -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scores, expected",
    [
        ([1.0, 3.0, 2.0], [1, 2, 0]),
        ([2.0, 2.0, 5.0, 2.0], [2, 0, 1, 3]),  # ties keep the first-stage order
        ([None, 3.0, None, 9.0], [0, 3, 2, 1]),  # unscored items stay where they were
        ([None, None], [0, 1]),
        ([], []),
    ],
)
def test_order_by_scores(scores, expected):
    assert order_by_scores(scores) == expected


# --- keyword filter -------------------------------------------------------------------------

KEYWORD_TEXTS = [
    "The Eiffel Tower is in PARIS.",
    "Le café de Flore est à Paris, près de l'église.",
    "A category of cats and dogs.",
    "机器学习是人工智能的一个分支。",
    "Machine   learning needs data; the cafe is closed.",
]


@pytest.mark.parametrize(
    "require, exclude, expected",
    [
        (("paris",), (), [0, 1]),  # case-insensitive
        (("cafe",), (), [1, 4]),  # accent-insensitive: cafe finds café
        (("café", "eglise"), (), [1]),  # ... both ways; all required words must occur
        (("cat",), (), []),  # whole words: "cat" is not "category"/"cats"
        (("machine learning",), (), [4]),  # a phrase, whatever the spacing
        (("学习",), (), [3]),  # CJK: substring
        (("人工智能", "机器"), (), [3]),
        ((), ("paris",), [2, 3, 4]),  # exclude alone
        (("paris",), ("CAFÉ",), [0]),  # exclude wins over require
        ((), ("分支",), [0, 1, 2, 4]),
    ],
)
def test_keyword_filter(require, exclude, expected):
    hits = make_hits(KEYWORD_TEXTS)
    kept = KeywordFilter(require, exclude).rerank("ignored", hits, top_k=10)
    assert [hit.chunk.id - 100 for hit in kept] == expected
    assert all(hit is hits[hit.chunk.id - 100] for hit in kept)  # filtered, not rescored


def test_keyword_filter_never_reorders():
    hits = list(reversed(make_hits(KEYWORD_TEXTS)))
    kept = KeywordFilter((), ("机器",)).rerank("q", hits, top_k=10)
    assert [hit.chunk.id for hit in kept] == [104, 102, 101, 100]


# --- LLM reranker ---------------------------------------------------------------------------


def _scorer(table):
    """A fake model answering from the passage it is shown: `table` maps a word to a reply."""

    def reply(prompt: str) -> str:
        passage = prompt.split("Passage: ", 1)[1]
        return next((answer for word, answer in table.items() if word in passage), "5")

    return reply


def test_llm_reranker_orders_by_digit_with_stable_ties():
    hits = make_hits()
    generator = ScriptedGenerator(
        _scorer(
            {"Eiffel": "3", "Octopuses": "9", "capital": "9", "Photosynthesis": "0", "café": "3", "巴黎": "7"}
        )
    )
    ranked = LLMReranker(generator).rerank("Where is Paris?", hits, top_k=10)

    assert [hit.chunk.id for hit in ranked] == [101, 102, 105, 100, 104, 103]
    assert [hit.score for hit in ranked] == [9.0, 9.0, 7.0, 3.0, 3.0, 0.0]
    assert ranked[0].sources["llm-rerank"] == {"rank": 1, "score": 9.0}
    assert ranked[0].sources["bm25"] == hits[1].sources["bm25"]
    assert all(call["grammar"] == DIGIT_GRAMMAR for call in generator.calls)
    assert all(call["max_tokens"] <= 4 for call in generator.calls)
    assert len(generator.calls) == len(hits)


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("7", 7.0),
        (" 0\n", 0.0),
        ("Score: 8/10", 8.0),
        ("10", 10.0),
        ("", None),
        ("high", None),
        ("42", None),
        ("-", None),
    ],
)
def test_parse_relevance(reply, expected):
    assert parse_relevance(reply) == expected


def test_llm_reranker_keeps_an_unreadable_item_in_place():
    hits = make_hits()[:4]
    generator = ScriptedGenerator(
        _scorer({"Eiffel": "2", "Octopuses": "no idea", "capital": "8", "Photosynthesis": ""})
    )
    ranked = LLMReranker(generator).rerank("q", hits, top_k=10)

    # Items 2 and 4 could not be read: they keep positions 2 and 4 and their first-stage scores.
    assert [hit.chunk.id for hit in ranked] == [102, 101, 100, 103]
    assert ranked[1].score == hits[1].score and "llm-rerank" not in ranked[1].sources
    assert [hit.rank for hit in ranked] == [1, 2, 3, 4]


def test_llm_reranker_passages_fit_a_small_context():
    hits = make_hits(["word " * 2000, "short passage"])
    generator = ScriptedGenerator(["4"], n_ctx=256)
    LLMReranker(generator).rerank("q", hits, top_k=2)
    for call in generator.calls:
        rendered = " ".join(message["content"] for message in call["messages"])
        assert generator.count_tokens(rendered) + call["max_tokens"] <= generator.n_ctx


@pytest.mark.model
def test_llm_reranker_with_the_real_gguf_model():
    """SmolLM2-135M scores through the digit grammar: every answer is readable."""
    from ragcli.config import load_settings
    from ragcli.generation.llama import load_generator

    generator = load_generator(None, load_settings(), n_ctx=512, threads=2)
    hits = make_hits()[:3]
    ranked = LLMReranker(generator).rerank("What is the capital of France?", hits, top_k=3)

    assert sorted(hit.chunk.id for hit in ranked) == [100, 101, 102]
    assert all(0.0 <= hit.sources["llm-rerank"]["score"] <= 9.0 for hit in ranked)
    assert [hit.score for hit in ranked] == sorted((hit.score for hit in ranked), reverse=True)


# --- the pipeline hook and the registry -----------------------------------------------------


def test_registry_names_match_the_cli_choices():
    assert set(RERANKERS) == {"cross-encoder", "llm", "keyword"}


@pytest.mark.parametrize(
    "options, message",
    [
        (QueryOptions(rerank="colbert"), "choose one of cross-encoder, keyword, llm"),
        (QueryOptions(rerank="keyword"), "--require"),
        (QueryOptions(rerank="llm"), "GGUF"),
    ],
)
def test_rerank_usage_errors(options, message):
    with pytest.raises(UsageError, match=message):
        rerank("q", make_hits(), options, generator_factory=None)


def test_rerank_filters_then_reranks_and_cuts_to_top_k():
    generator = ScriptedGenerator(_scorer({"capital": "9", "café": "8"}))
    options = QueryOptions(rerank="llm", require=("paris",), top_k=2)
    ranked = rerank("Where is Paris?", make_hits(), options, generator_factory=lambda: generator)

    assert [hit.chunk.id for hit in ranked] == [102, 104]
    assert [hit.rank for hit in ranked] == [1, 2]
    assert len(generator.calls) == 3  # only the passages mentioning Paris were scored


def test_rerank_keyword_only_renumbers_ranks():
    options = QueryOptions(rerank="keyword", exclude=("paris",))
    ranked = rerank("q", make_hits(), options)
    assert [(hit.chunk.id, hit.rank) for hit in ranked] == [(101, 1), (103, 2), (105, 3)]


# --- cross-encoder --------------------------------------------------------------------------


@pytest.mark.parametrize("model", [None, "", "/no/such/folder", "./missing", "no-such-org/no-such-model"])
def test_cross_encoder_without_a_usable_model_fails_fast(model):
    # The hub-cache lookup's first import of huggingface_hub (0.1 s idle, seconds on a loaded
    # machine) is not what "fast" is about (no hub access, no model load): import it first.
    import huggingface_hub  # noqa: F401

    started = time.monotonic()
    with pytest.raises(ModelNotFound, match="--rerank-model PATH") as error:
        rerank("q", make_hits(), QueryOptions(rerank="cross-encoder", rerank_model=model))
    assert time.monotonic() - started < 2.0
    assert "CrossEncoder.save()" in str(error.value)


def test_cross_encoder_error_path_imports_no_torch():
    code = (
        "import sys\nfrom ragcli.retrieval.rerank import load_cross_encoder\n"
        "from ragcli.errors import ModelNotFound\n"
        "for name in (None, '/nope', 'no-such-org/no-such-model'):\n"
        "    try: load_cross_encoder(name)\n"
        "    except ModelNotFound: pass\n"
        "heavy = ('torch', 'sentence_transformers', 'transformers')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


def test_cross_encoder_file_instead_of_folder(tmp_path):
    model = tmp_path / "model.bin"
    model.write_bytes(b"not a model")
    with pytest.raises(ModelNotFound, match="not a CrossEncoder folder"):
        CrossEncoderReranker(str(model))


def test_cross_encoder_folder_that_is_no_model(tmp_path):
    # Without the [torch] extra the error names the extra before the folder is looked at.
    pytest.importorskip("sentence_transformers", reason="the [torch] extra is not installed")
    (tmp_path / "readme.txt").write_text("empty", encoding="utf-8")
    with pytest.raises(ModelNotFound, match="--rerank-model PATH"):
        CrossEncoderReranker(str(tmp_path))


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A 2-layer, 32-wide BERT cross-encoder with random weights, saved like a real one."""
    torch = pytest.importorskip("torch", reason="the [torch] extra is not installed")
    pytest.importorskip("sentence_transformers", reason="the [torch] extra is not installed")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "paris"] + sorted(
        {word.strip(".,").lower() for hit in make_hits() for word in hit.chunk.text.split()} - {"paris"}
    )
    torch.manual_seed(0)
    # A wide initialisation spreads the random scores, so the expected order has no near-ties.
    config = BertConfig(
        vocab_size=len(words),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.5,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(vocab={word: index for index, word in enumerate(words)}).save_pretrained(folder)
    return folder


def test_cross_encoder_orders_by_the_model_scores(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    hits = make_hits()
    query = "where is paris"
    expected = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict(
        [(query, hit.chunk.text) for hit in hits], show_progress_bar=False
    )

    options = QueryOptions(rerank="cross-encoder", rerank_model=str(tiny_cross_encoder), top_k=4)
    ranked = rerank(query, hits, options)

    order = sorted(range(len(hits)), key=lambda index: -expected[index])[:4]
    assert [hit.chunk.id for hit in ranked] == [hits[index].chunk.id for index in order]
    expected_scores = [float(expected[index]) for index in order]
    assert [hit.score for hit in ranked] == pytest.approx(expected_scores, abs=1e-5)
    assert [hit.sources["cross-encoder"]["rank"] for hit in ranked] == [1, 2, 3, 4]
    assert all("bm25" in hit.sources for hit in ranked)
    assert len(set(round(float(score), 4) for score in expected)) == len(hits)  # the test is meaningful
