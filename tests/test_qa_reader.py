"""The extractive QA reader (`--reader PATH`) on a tiny random BERT QA model built here.

The model is a `BertForQuestionAnswering` folder as Hugging Face saves it (config.json,
model.safetensors with `bert.`-prefixed encoder weights and a `qa_outputs` head,
tokenizer.json), small enough to build in milliseconds. Its start/end logits are checked
against a NumPy forward pass of the same weights, and the reader's span against the argmax
span of those reference logits.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from runner import rag

from ragcli.answer.qa_reader import MAX_ANSWER_TOKENS, load_qa_reader
from ragcli.answer.sentences import Sentence
from ragcli.errors import ModelNotFound

HIDDEN, HEADS, LAYERS, INNER, POSITIONS = 16, 2, 2, 32, 64
WORDS = (
    "the lighthouse was first lit in 1698 by henry winstanley who built it on rock "
    "when did what is a tower of stone and light keeper named north sea storm year"
).split()
QUESTION = "Who built the lighthouse?"
CONTEXT = "The lighthouse was first lit in 1698 by Henry Winstanley, who built it on the rock."


def _tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", ",", ".", "?", *WORDS])}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.save(str(folder / "tokenizer.json"))


def _weights(vocab_size: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def random(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    tensors = {
        "bert.embeddings.word_embeddings.weight": random(vocab_size, HIDDEN),
        "bert.embeddings.position_embeddings.weight": random(POSITIONS, HIDDEN),
        "bert.embeddings.token_type_embeddings.weight": random(2, HIDDEN),
        "qa_outputs.weight": random(2, HIDDEN),
        "qa_outputs.bias": random(2),
    }
    norms = ["bert.embeddings.LayerNorm."]
    for layer in range(LAYERS):
        prefix = f"bert.encoder.layer.{layer}."
        for name, shape in (
            ("attention.self.query", (HIDDEN, HIDDEN)),
            ("attention.self.key", (HIDDEN, HIDDEN)),
            ("attention.self.value", (HIDDEN, HIDDEN)),
            ("attention.output.dense", (HIDDEN, HIDDEN)),
            ("intermediate.dense", (INNER, HIDDEN)),
            ("output.dense", (HIDDEN, INNER)),
        ):
            tensors[f"{prefix}{name}.weight"] = random(*shape)
            tensors[f"{prefix}{name}.bias"] = random(shape[0])
        norms += [prefix + "attention.output.LayerNorm.", prefix + "output.LayerNorm."]
    for norm in norms:
        tensors[norm + "weight"] = 1 + random(HIDDEN) * 0.1
        tensors[norm + "bias"] = random(HIDDEN) * 0.1
    return tensors


def make_qa_model(folder: Path, seed: int = 0) -> Path:
    """A tiny random BertForQuestionAnswering folder."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True)
    _tokenizer(folder)
    vocab_size = len(json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"])
    config = {
        "model_type": "bert",
        "architectures": ["BertForQuestionAnswering"],
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": INNER,
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 2,
        "vocab_size": vocab_size,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    }
    (folder / "config.json").write_text(json.dumps(config))
    save_file(_weights(vocab_size, seed), str(folder / "model.safetensors"))
    return folder


# -- a NumPy reference of BertForQuestionAnswering ----------------------------------------------


def _layer_norm(x: np.ndarray, w: dict, prefix: str) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * w[prefix + "weight"] + w[prefix + "bias"]


def _linear(x: np.ndarray, w: dict, prefix: str) -> np.ndarray:
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def reference_logits(w: dict, ids: list[int], types: list[int]) -> tuple[np.ndarray, np.ndarray]:
    from scipy.special import erf

    e = "bert.embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][: len(ids)]
    x = _layer_norm(x + w[e + "token_type_embeddings.weight"][types], w, e + "LayerNorm.")
    size = HIDDEN // HEADS
    for layer in range(LAYERS):
        p = f"bert.encoder.layer.{layer}."

        def heads(name: str) -> np.ndarray:
            return (
                _linear(x, w, p + f"attention.self.{name}").reshape(len(ids), HEADS, size).transpose(1, 0, 2)
            )

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attended = (scores / scores.sum(-1, keepdims=True)) @ v
        joined = attended.transpose(1, 0, 2).reshape(len(ids), HIDDEN)
        x = _layer_norm(
            x + _linear(joined, w, p + "attention.output.dense"), w, p + "attention.output.LayerNorm."
        )
        inner = _linear(x, w, p + "intermediate.dense")
        inner = 0.5 * inner * (1 + erf(inner / math.sqrt(2)))
        x = _layer_norm(x + _linear(inner, w, p + "output.dense"), w, p + "output.LayerNorm.")
    logits = _linear(x, w, "qa_outputs")
    return logits[:, 0], logits[:, 1]


def reference_span(start: np.ndarray, end: np.ndarray, context: list[bool]) -> tuple[float, int, int]:
    """(best score - null score, first token, last token), by brute force."""
    best = max(
        (start[i] + end[j], i, j)
        for i in range(len(start))
        for j in range(i, min(i + MAX_ANSWER_TOKENS, len(end)))
        if context[i] and context[j]
    )
    return best[0] - (start[0] + end[0]), best[1], best[2]


@pytest.fixture(scope="module")
def qa_model(tmp_path_factory) -> Path:
    return make_qa_model(tmp_path_factory.mktemp("qa") / "tiny-squad2")


@pytest.fixture(scope="module")
def encoded(qa_model):
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    encoding = Tokenizer.from_file(str(qa_model / "tokenizer.json")).encode(QUESTION, CONTEXT)
    weights = load_file(str(qa_model / "model.safetensors"))
    start, end = reference_logits(weights, encoding.ids, encoding.type_ids)
    return encoding, start, end


def sentence(text: str) -> Sentence:
    return Sentence(text=text, passage=0, start=0)


def test_onnx_logits_equal_the_numpy_reference(qa_model, encoded, tmp_path):
    encoding, start, end = encoded
    reader = load_qa_reader(str(qa_model), cache_dir=tmp_path)
    got_start, got_end = reader.logits(encoding)
    np.testing.assert_allclose(got_start, start, atol=1e-4)
    np.testing.assert_allclose(got_end, end, atol=1e-4)
    assert list((tmp_path / "onnx-qa").glob("*/model.onnx")), "the built graph is cached"


def test_the_reader_returns_the_reference_argmax_span(qa_model, encoded, tmp_path):
    encoding, start, end = encoded
    context = [sid == 1 for sid in encoding.sequence_ids]
    margin, first, last = reference_span(start, end, context)
    expected = CONTEXT[encoding.offsets[first][0] : encoding.offsets[last][1]].strip(" ,;:")
    reader = load_qa_reader(str(qa_model), cache_dir=tmp_path, null_margin=margin - 1.0)
    short = reader.read(QUESTION, [sentence(CONTEXT)])
    assert short is not None and short.text == expected and short.text in CONTEXT


def test_no_answer_when_the_null_score_wins(qa_model, encoded, tmp_path):
    encoding, start, end = encoded
    margin, _, _ = reference_span(start, end, [sid == 1 for sid in encoding.sequence_ids])
    reader = load_qa_reader(str(qa_model), cache_dir=tmp_path, null_margin=margin + 1.0)
    assert reader.read(QUESTION, [sentence(CONTEXT)]) is None


def test_a_long_context_is_truncated_to_the_model_length(qa_model, tmp_path):
    reader = load_qa_reader(str(qa_model), cache_dir=tmp_path, null_margin=-1e9)
    long_context = CONTEXT + " the tower of stone" * 40
    short = reader.read(QUESTION, [sentence(long_context)])
    assert short is not None and short.text in long_context


def test_a_question_longer_than_the_model_gives_no_short_line(qa_model, tmp_path):
    reader = load_qa_reader(str(qa_model), cache_dir=tmp_path, null_margin=-1e9)
    assert reader.read("who built the tower " * 40, [sentence(CONTEXT)]) is None


def test_a_folder_without_weights_or_not_bert_is_one_clear_error(qa_model, tmp_path):
    import shutil

    for broken, change in (("no-weights", "model.safetensors"), ("not-bert", "config.json")):
        folder = tmp_path / broken
        shutil.copytree(qa_model, folder)
        if change == "model.safetensors":
            (folder / change).unlink()
        else:
            config = json.loads((folder / change).read_text())
            (folder / change).write_text(json.dumps({**config, "model_type": "roberta"}))
        with pytest.raises(ModelNotFound, match=broken):
            load_qa_reader(str(folder), cache_dir=tmp_path)


def test_rag_ask_with_a_qa_reader_folder(qa_model, tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lighthouse.txt").write_text(CONTEXT + "\n\nA keeper named the storm year.\n")
    assert rag("ingest", str(docs)).returncode == 0
    monkeypatch.setenv("RAG_READER_MARGIN", "-1000")  # the random model's best span always wins
    done = rag("ask", "--reader", str(qa_model), "--answer-style", "evidence", QUESTION, "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["short_answer"], answer
    assert answer["short_answer"] in answer["answer"].split("\n", 1)[1]
    monkeypatch.setenv("RAG_READER_MARGIN", "1e9")  # now "no answer" always wins (not the cached one)
    done = rag("ask", "--reader", str(qa_model), "--answer-style", "evidence", QUESTION, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["short_answer"] is None, done.stdout


def test_rag_ask_names_a_missing_or_incomplete_reader_folder(qa_model, tmp_path):
    import shutil

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lighthouse.txt").write_text(CONTEXT + "\n")
    assert rag("ingest", str(docs)).returncode == 0
    incomplete = tmp_path / "incomplete"
    shutil.copytree(qa_model, incomplete)
    (incomplete / "model.safetensors").unlink()
    for folder in (tmp_path / "absent", incomplete):
        done = rag("ask", "--reader", str(folder), "--answer-style", "evidence", QUESTION)
        assert done.returncode == 1 and not done.stdout
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and str(folder) in lines[0], done.stderr
