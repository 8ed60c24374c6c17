"""Tests for ragcli.ingest.splitting: AdalFlow's documented outputs, CJK sentences, offsets, pages."""

from __future__ import annotations

import random
import re

import pytest

from ragcli.choices import DEFAULT_GROUP
from ragcli.errors import UsageError
from ragcli.ingest.splitting import (
    PRESETS,
    page_at,
    page_of,
    page_starts,
    preset,
    split,
    validate_settings,
)
from ragcli.types import ChunkSettings
from ragcli.text import code_lines, sentence_spans

ADALFLOW = "https://github.com/SylphAI-Inc/AdalFlow/blob/main/"


def texts(text: str, split_by: str, size: int, overlap: int, **kw) -> list[str]:
    spans = split(text, split_by=split_by, chunk_size=size, chunk_overlap=overlap, **kw)
    return [s.text for s in spans]


def words_and_punct(s: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", s)]


def tiktoken_like(s: str) -> list[tuple[int, int]]:
    """Offsets shaped like cl100k tokens on plain English: a word carries its leading space."""
    return [(m.start(), m.end()) for m in re.finditer(r" ?\w+|[^\w\s]", s)]


def adalflow_reference(text: str, separator: str, size: int, overlap: int) -> list[str]:
    """AdalFlow's TextSplitter for a single separator, rewritten from its source
    (adalflow/adalflow/components/data_process/text_splitter.py, `_merge_units_to_chunks`)."""
    units = text.split(separator)
    chunks, idx = [], 0
    for idx in range(0, len(units), size - overlap):
        if idx + size >= len(units):
            break
        chunks.append(separator.join(units[idx : idx + size]) + separator)
    if idx < len(units):
        last = separator.join(units[idx:])
        if last:
            chunks.append(last)
    return chunks


# --- AdalFlow documentation and test-suite examples, exact strings -------------------------


# Source: docs/source/tutorials/text_splitter.rst ("Split by word") and the TextSplitter
# docstring in adalflow/adalflow/components/data_process/text_splitter.py.
def test_adalflow_tutorial_word_example():
    text = "Example text. More example text. Even more text to illustrate."
    assert texts(text, "word", 5, 1) == [
        "Example text. More example text. ",
        "text. Even more text to ",
        "to illustrate.",
    ]


# Source: docs/source/tutorials/text_splitter.rst ("Split by token", chunk_size=5, overlap=0),
# made with tiktoken cl100k_base; a regex gives the same token boundaries on this text.
def test_adalflow_tutorial_token_example():
    text = "Example text. More example text. Even more text to illustrate."
    assert texts(text, "token", 5, 0, tokenize=tiktoken_like) == [
        "Example text. More example",
        " text. Even more text",
        " to illustrate.",
    ]


# Source: docs/source/tutorials/text_splitter.rst, table "Chunking Example Detailed". The table
# prints chunks trimmed; AdalFlow's code keeps the separators, as its own tests below show.
# (The table's token row is stale: it was made for "lightrag", not "adalflow".)
def test_adalflow_table_word_example():
    text = "Hello, this is adalflow. Please implement your splitter here."
    got = texts(text, "word", 5, 2)
    assert got == [
        "Hello, this is adalflow. Please ",
        "adalflow. Please implement your splitter ",
        "your splitter here.",
    ]
    assert [c.strip() for c in got] == [
        "Hello, this is adalflow. Please",
        "adalflow. Please implement your splitter",
        "your splitter here.",
    ]


def test_adalflow_table_sentence_example():
    text = "Hello, this is adalflow. Please implement your splitter here."
    got = texts(text, "sentence", 1, 0)
    assert got == ["Hello, this is adalflow.", " Please implement your splitter here."]
    assert [c.strip() for c in got] == [
        "Hello, this is adalflow.",
        "Please implement your splitter here.",
    ]


# Source: LightRAG-era docs/source/developer_notes/text_splitter.rst (DocumentSplitter):
# "Review: The theater service is terrible. The movie is good." split_by word, length 6,
# overlap 2 -> "Review: The theater service is terrible.", "is terrible. The movie is good."
def test_adalflow_theater_example():
    text = "Review: The theater service is terrible. The movie is good."
    got = texts(text, "word", 6, 2)
    assert got == ["Review: The theater service is terrible. ", "is terrible. The movie is good."]


# Source: docs/source/tutorials/document_splitter.rst (word, split_length 15, overlap 2); the
# printed output shows the trailing space of the first chunk ("Sentiment: , estimated...").
def test_adalflow_document_splitter_reviews():
    loved = "Review: I absolutely loved the friendly staff and the welcoming atmosphere! Sentiment: Positive"
    movie = "Review: What a fantastic movie! Had a great time and would watch it again! "
    store = "Review: The store is not clean and smells bad. Sentiment: Negative"
    assert texts(loved, "word", 15, 2) == [loved]
    assert texts(movie + "Sentiment: Positive", "word", 15, 2) == [
        movie + "Sentiment: ",
        "again! Sentiment: Positive",
    ]
    assert texts(store, "word", 15, 2) == [store]


# Source: LightRAG-era docs/source/developer_notes/text_splitter.rst, table "Text Splitting
# Options": the units of each split_by (chunk_size 1, overlap 0 shows the units themselves).
def test_adalflow_units_table():
    assert texts("Hello, world!\fNew page starts here.", "page", 1, 0) == [
        "Hello, world!\x0c",
        "New page starts here.",
    ]
    assert texts("Hello, world!\n\nNew paragraph starts here.", "passage", 1, 0) == [
        "Hello, world!\n\n",
        "New paragraph starts here.",
    ]
    # AdalFlow lists a trailing '' unit here; empty chunks are dropped.
    assert texts("Hello, world. This is LightRAG.", "sentence", 1, 0) == [
        "Hello, world.",
        " This is LightRAG.",
    ]
    assert texts("Hello, world. This is LightRAG.", "word", 1, 0) == [
        "Hello, ",
        "world. ",
        "This ",
        "is ",
        "LightRAG.",
    ]


# Source: adalflow/tests/test_text_splitter.py (word, chunk_size 5, overlap 2 unless noted).
def test_adalflow_unit_tests():
    assert texts("This is a simple test", "word", 5, 2) == ["This is a simple test"]
    assert texts("This is a test. It should work well.", "sentence", 1, 0) == [
        "This is a test.",
        " It should work well.",
    ]
    assert texts("one two three four five six seven", "word", 5, 2) == [
        "one two three four five ",
        "four five six seven",
    ]
    assert texts("This is a simple test to check splitting.", "word", 5, 2) == [
        "This is a simple test ",
        "simple test to check splitting.",
    ]


# --- agreement with AdalFlow's algorithm on random text --------------------------------------


def random_text(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


# Sentences are not compared: AdalFlow cuts at every ".", ragcli's sentence splitter keeps
# "3.14" and "U.S." whole (test_sentence_units_are_the_answers_sentences).
@pytest.mark.parametrize("split_by", ["page", "passage", "word"])
def test_matches_adalflow_reference_on_random_text(split_by):
    separator = {"page": "\f", "passage": "\n\n", "word": " "}[split_by]
    alphabet = "abcde  ..\n\n\f"
    for seed in range(150):
        rng = random.Random(seed)
        text = random_text(rng, alphabet, rng.randrange(0, 120))
        size = rng.randrange(1, 7)
        overlap = rng.randrange(0, size)
        expected = [c for c in adalflow_reference(text, separator, size, overlap) if c.strip()]
        assert texts(text, split_by, size, overlap) == expected, (seed, text, size, overlap)


# --- invariants ---------------------------------------------------------------------------


def check_spans(text: str, spans) -> None:
    assert [s.order for s in spans] == list(range(len(spans)))
    for span in spans:
        assert 0 <= span.start < span.end <= len(text)
        assert span.text == text[span.start : span.end]
        assert span.text.strip()
    assert [s.start for s in spans] == sorted(s.start for s in spans)


@pytest.mark.parametrize("split_by", ["page", "passage", "sentence", "word", "token"])
def test_offsets_invariant_on_random_text(split_by):
    alphabet = "ab 中文  .!?。！？\n\n\f；,"
    for seed in range(120):
        rng = random.Random(1000 + seed)
        text = random_text(rng, alphabet, rng.randrange(0, 200))
        size = rng.randrange(1, 9)
        overlap = rng.randrange(0, size)
        spans = split(
            text,
            split_by=split_by,
            chunk_size=size,
            chunk_overlap=overlap,
            tokenize=words_and_punct,
        )
        check_spans(text, spans)
        # Windows cover every non-blank character of the text.
        covered = set().union(*(range(s.start, s.end) for s in spans)) if spans else set()
        assert all(i in covered for i, ch in enumerate(text) if not ch.isspace()), seed


def test_empty_and_blank_text_give_no_chunks():
    for split_by in ["page", "passage", "sentence", "word", "token"]:
        for text in ["", "   ", "\f\f", "\n\n\n\n"]:
            assert texts(text, split_by, 3, 1, tokenize=words_and_punct) == []


def test_blank_windows_dropped_and_order_renumbered():
    spans = split("a  b", split_by="word", chunk_size=1, chunk_overlap=0)
    assert [(s.text, s.order, s.start, s.end) for s in spans] == [("a ", 0, 0, 2), ("b", 1, 3, 4)]


# --- sentences: Chinese, mixed, English extension -----------------------------------------


def test_chinese_sentences():
    text = "今天天气很好。我们去公园吧！你来吗？好的。"
    assert texts(text, "sentence", 1, 0) == ["今天天气很好。", "我们去公园吧！", "你来吗？", "好的。"]
    # Unlike AdalFlow, no empty unit follows the final terminator, so no last window repeats
    # the last sentence on its own.
    assert texts(text, "sentence", 2, 1) == [
        "今天天气很好。我们去公园吧！",
        "我们去公园吧！你来吗？",
        "你来吗？好的。",
    ]


def test_sentence_units_are_the_answers_sentences():
    """Ingest's sentence windows and the answer's quoted sentences come from one splitter:
    "3.14", "U.S." and a numbered step's "2." end no sentence."""
    text = "The U.S. Army paid 3.14 dollars. Then it left!\n1. Mix the flour.\n2. Add salt."
    assert [t.strip() for t in texts(text, "sentence", 1, 0)] == [
        "The U.S. Army paid 3.14 dollars.",
        "Then it left!",
        "1. Mix the flour.",
        "2. Add salt.",
    ]


def test_a_fenced_code_block_is_one_sentence():
    """Code is not prose: a comment line ("# Note. This"), a line ending with ":" or a "- "
    line inside a fenced block cut it into pieces that read as neither code nor sentences."""
    code = "```python\ndef f():\n    # Note. This works.\n    - not a list\n    return 1\n```"
    text = f"Run this:\n\n{code}\nThen go. Done.\n\n~~~\nopen block at the end: \nStill code."
    assert [t.strip() for t in texts(text, "sentence", 1, 0)] == [
        "Run this:",
        code,
        "Then go.",
        "Done.",
        "~~~\nopen block at the end: \nStill code.",
    ]
    assert texts("Inline ``` fences. Are prose.", "sentence", 1, 0) == ["Inline ``` fences.", " Are prose."]


def test_a_passage_cut_inside_a_code_block_keeps_its_prose_prose():
    """A passage that starts inside a block starts with its closing fence: read as an opening
    one, the prose after it was quoted line by line as code."""
    cut = "npm x --y\n```\n\nOnly the named package. Is exempt.\n\n```bash\nnpm z\n```\n"
    assert [cut[a:b] for a, b in sentence_spans(cut)] == [
        "npm x --y\n```",
        "Only the named package.",
        "Is exempt.",
        "```bash\nnpm z\n```",
    ]
    assert code_lines("npm x --y\n```") == ["npm x --y"] and code_lines("Is exempt.") is None


def test_chinese_semicolon_does_not_end_a_sentence():
    assert texts("他来了；她走了。然后呢？", "sentence", 1, 0) == ["他来了；她走了。", "然后呢？"]


def test_mixed_english_and_chinese_sentences():
    text = "RAG is useful! 检索增强生成很有用。Is it fast? 是的，很快。Done."
    assert texts(text, "sentence", 1, 0) == [
        "RAG is useful!",
        " 检索增强生成很有用。",
        "Is it fast?",
        " 是的，很快。",
        "Done.",
    ]


def test_english_question_and_exclamation_marks_end_sentences():
    assert texts("Really? Yes! Fine.", "sentence", 2, 0) == ["Really? Yes!", " Fine."]


# --- tokens ---------------------------------------------------------------------------------


def test_token_split_uses_original_substrings():
    text = "Hello, world!  How are   you?"
    spans = split(text, split_by="token", chunk_size=3, chunk_overlap=1, tokenize=words_and_punct)
    # tokens: Hello , world ! How are you ?
    assert [s.text for s in spans] == ["Hello, world", "world!  How", "How are   you", "you?"]
    check_spans(text, spans)


def test_token_split_ignores_special_tokens_with_empty_offsets():
    def with_specials(s):  # like a Hugging Face offset_mapping with [CLS] ... [SEP]
        return [(0, 0), *words_and_punct(s), (0, 0)]

    assert texts("a b c d", "token", 2, 0, tokenize=with_specials) == ["a b", "c d"]


def test_token_split_needs_a_tokenizer():
    with pytest.raises(ValueError, match="tokenize"):
        split("a b", split_by="token", chunk_size=2, chunk_overlap=0)


def test_token_offsets_out_of_order_are_refused():
    with pytest.raises(ValueError, match="order"):
        texts("a b", "token", 2, 0, tokenize=lambda s: [(2, 3), (0, 1)])


# --- pages ----------------------------------------------------------------------------------


def test_page_split_and_page_numbers():
    text = "Page one text.\fPage two text.\f\fPage four."
    spans = split(text, split_by="page", chunk_size=1, chunk_overlap=0)
    assert [s.text for s in spans] == ["Page one text.\f", "Page two text.\f", "Page four."]
    starts = page_starts(text)
    assert starts == [0, 15, 30, 31]
    assert [page_at(starts, s.start) for s in spans] == [1, 2, 4]
    assert [page_of(s.start, text) for s in spans] == [1, 2, 4]


def test_page_at_agrees_with_page_of():
    rng = random.Random(7)
    text = random_text(rng, "ab \f", 300)
    starts = page_starts(text)
    for offset in range(len(text) + 1):
        assert page_at(starts, offset) == page_of(offset, text)
    assert page_of(text.index("\f"), text) == 1  # a form feed belongs to the page it closes


def test_word_chunks_know_their_pages():
    text = "alpha beta\fgamma delta"
    spans = split(text, split_by="word", chunk_size=1, chunk_overlap=0)
    starts = page_starts(text)
    # "beta\fgamma " is one word: str.split(" ") does not cut at a form feed.
    assert [(s.text, page_at(starts, s.start)) for s in spans] == [
        ("alpha ", 1),
        ("beta\fgamma ", 1),
        ("delta", 2),
    ]


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            ChunkSettings("word", 50, 50),
            r"--chunk-overlap \(50\) must be smaller than --chunk-size \(50\)",
        ),
        (
            ChunkSettings("word", 10, 20),
            r"--chunk-overlap \(20\) must be smaller than --chunk-size \(10\)",
        ),
        (ChunkSettings("word", 0, 0), r"--chunk-size must be at least 1 \(got 0\)"),
        (ChunkSettings("word", 5, -1), r"--chunk-overlap must be 0 or more \(got -1\)"),
        (ChunkSettings("line", 5, 1), r"--split-by must be one of page, passage, sentence, word"),
    ],
)
def test_bad_settings_raise_usage_error(settings, message):
    with pytest.raises(UsageError, match=message):
        validate_settings(settings)
    with pytest.raises(UsageError, match=message):
        texts("a b c", settings.split_by, settings.chunk_size, settings.chunk_overlap)


def test_presets():
    assert PRESETS["fine"] == ChunkSettings("token", 128, 12)
    assert PRESETS["medium"] == ChunkSettings("token", 256, 25)
    assert PRESETS["coarse"] == ChunkSettings("token", 1024, 100)
    assert preset(DEFAULT_GROUP) == PRESETS["medium"]
    for settings in PRESETS.values():
        validate_settings(settings)
    with pytest.raises(UsageError, match="fine, medium, coarse"):
        preset("huge")
    with pytest.raises(TypeError):
        PRESETS["fine"] = ChunkSettings()  # type: ignore[index]


# --- size -----------------------------------------------------------------------------------


def test_large_text_splits_completely():
    sentence = "The quick brown fox jumps over the lazy dog. 敏捷的狐狸跳过了懒狗。"
    text = sentence * 20_000  # about 1.2 M characters
    spans = split(text, split_by="word", chunk_size=200, chunk_overlap=20)
    check_spans(text, spans)
    assert spans[-1].end == len(text)
    assert len(split(text, split_by="sentence", chunk_size=8, chunk_overlap=2)) == 6_667
