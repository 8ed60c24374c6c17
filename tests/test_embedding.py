"""The ONNX embedding runtime against the sentence-transformers reference.

The ONNX export is made once per test session (about a minute on 2 cores) into a
session-scoped cache directory; every other test reuses it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from ragcli.embedding import (
    DEFAULT_MODEL_ID,
    ExportFailed,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    cached_onnx,
    default_model_path,
    load_embedder,
    model_fingerprint,
    read_model_config,
)
from ragcli.embedding.export import WEIGHTS_FILE
from ragcli.embedding.pooling import l2_normalise, pool
from ragcli.errors import ModelNotFound

LONG_TEXT = " ".join(
    f"Paragraph {i}: retrieval-augmented generation combines a retriever and a generator." for i in range(80)
)
TEXTS = [
    "What is retrieval-augmented generation?",
    "检索增强生成结合了检索器和生成器。",
    "Crème brûlée, café au lait et Ærøskøbing: les accents comptent.",
    "x",
    "   surrounded by spaces   ",
    "Mixed 中文 and English with numbers 12345 and emoji 🙂.",
    LONG_TEXT,
]


@pytest.fixture(scope="session")
def onnx_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory per test session, so the ONNX export happens once."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def onnx_embedder(onnx_cache_dir: Path) -> OnnxEmbedder:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a silent fallback to torch would hide a broken export
        embedder = load_embedder(None, cache_dir=onnx_cache_dir)
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


@pytest.fixture(scope="session")
def reference_embedder(onnx_cache_dir: Path) -> SentenceTransformerEmbedder:
    pytest.importorskip("sentence_transformers", reason="the [torch] extra is not installed")
    embedder = load_embedder(None, cache_dir=onnx_cache_dir, runtime="sentence-transformers")
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


def test_onnx_vectors_match_sentence_transformers(onnx_embedder, reference_embedder) -> None:
    fast = onnx_embedder.embed(TEXTS)
    reference = reference_embedder.embed(TEXTS)
    cosines = (fast * reference).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def test_idle_threads_sleep_between_queries(onnx_embedder) -> None:
    """A spinning pool kept the second core busy after every query's embedding."""
    options = onnx_embedder._session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_long_text_is_truncated_like_the_reference(onnx_embedder) -> None:
    assert len(onnx_embedder.token_offsets(LONG_TEXT)) > onnx_embedder.max_tokens
    # Everything past the model's limit is cut, so extra tail text changes nothing.
    longer = LONG_TEXT + " a completely different ending about cooking pasta"
    vectors = onnx_embedder.embed([LONG_TEXT, longer])
    assert float(vectors[0] @ vectors[1]) > 0.99999


def test_rows_keep_input_order_across_mixed_lengths(onnx_embedder) -> None:
    texts = [LONG_TEXT[: 40 * (i % 5 + 1)] + f" item {i}" for i in range(11)]
    batched = onnx_embedder.embed(texts, batch_size=3)
    one_by_one = np.vstack([onnx_embedder.embed([text]) for text in texts])
    assert np.allclose(batched, one_by_one, atol=1e-5)


def test_vectors_are_unit_length_float32(onnx_embedder) -> None:
    vectors = onnx_embedder.embed(TEXTS, batch_size=4)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), onnx_embedder.dimension) == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx_embedder.embed([]).shape == (0, 384)


def test_fingerprint_is_the_same_for_both_runtimes(onnx_embedder, reference_embedder) -> None:
    assert onnx_embedder.fingerprint == reference_embedder.fingerprint
    assert len(onnx_embedder.fingerprint) == 32
    assert onnx_embedder.max_tokens == reference_embedder.max_tokens == 254


@pytest.mark.parametrize("text", TEXTS[:3] + [TEXTS[5]])
def test_token_offsets_are_substrings(onnx_embedder, text: str) -> None:
    offsets = onnx_embedder.token_offsets(text)
    assert offsets
    starts = [start for start, _ in offsets]
    assert starts == sorted(starts)
    for start, end in offsets:
        piece = text[start:end]
        assert 0 <= start < end <= len(text)
        assert piece.strip() == piece  # tokens never cover whitespace


def test_token_offsets_follow_wordpieces(onnx_embedder) -> None:
    text = "Embeddings unbelievably"
    pieces = [text[start:end] for start, end in onnx_embedder.token_offsets(text)]
    assert "".join(pieces) == "Embeddingsunbelievably"
    assert len(pieces) > 2  # split into word pieces, not whole words


def test_onnx_runtime_does_not_import_torch(onnx_embedder, onnx_cache_dir: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from ragcli.embedding import load_embedder
        vectors = load_embedder(None, cache_dir={str(onnx_cache_dir)!r}).embed(["hello"])
        assert vectors.shape == (1, 384)
        heavy = {{"torch", "transformers", "sentence_transformers"}} & set(sys.modules)
        print(sorted(heavy))
        """
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=root, check=True
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_export_is_cached(onnx_embedder, onnx_cache_dir: Path) -> None:
    config = read_model_config(Path(default_model_path()))
    first = cached_onnx(config, onnx_cache_dir, fingerprint=onnx_embedder.fingerprint)
    stamp = first.stat().st_mtime_ns
    again = cached_onnx(config, onnx_cache_dir, fingerprint=onnx_embedder.fingerprint)
    assert again == first and again.stat().st_mtime_ns == stamp
    assert not [p for p in first.parent.parent.iterdir() if p.name.startswith(".export-")]


def test_export_keeps_weights_beside_the_graph(onnx_embedder, onnx_cache_dir: Path) -> None:
    """External weights make sessions open about twice as fast; the graph alone is small."""
    config = read_model_config(Path(default_model_path()))
    graph = cached_onnx(config, onnx_cache_dir, fingerprint=onnx_embedder.fingerprint)
    weights = graph.with_name(WEIGHTS_FILE)
    assert weights.stat().st_size > 50_000_000 > 5_000_000 > graph.stat().st_size


def test_single_file_export_is_converted_with_the_same_vectors(
    onnx_embedder, onnx_cache_dir: Path, tmp_path: Path
) -> None:
    """An export made by an earlier version (weights inside the graph) is rewritten once."""
    import onnx

    config = read_model_config(Path(default_model_path()))
    source = cached_onnx(config, onnx_cache_dir, fingerprint=onnx_embedder.fingerprint)
    old = tmp_path / "onnx" / onnx_embedder.fingerprint
    old.mkdir(parents=True)
    onnx.save_model(onnx.load(str(source)), str(old / "model.onnx"))  # one self-contained file
    converted = cached_onnx(config, tmp_path, fingerprint=onnx_embedder.fingerprint)
    assert converted == old / "model.onnx" and (old / WEIGHTS_FILE).is_file()
    embedder = OnnxEmbedder(config, converted, model_id="m", fingerprint=onnx_embedder.fingerprint)
    np.testing.assert_array_equal(embedder.embed(TEXTS[:3]), onnx_embedder.embed(TEXTS[:3]))


@pytest.mark.parametrize("name", ["/no/such/model", "sentence-transformers/all-mpnet-base-v2"])
def test_missing_model_raises_quickly(name: str, tmp_path: Path) -> None:
    started = time.perf_counter()
    with pytest.raises(ModelNotFound, match="no network access is used"):
        load_embedder(name, cache_dir=tmp_path)
    assert time.perf_counter() - started < 1.0


def test_folder_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="modules.json is missing"):
        load_embedder(str(tmp_path), cache_dir=tmp_path)


def test_failed_export_falls_back_with_a_warning(monkeypatch, reference_embedder, tmp_path: Path) -> None:
    def broken_export(*args, **kwargs):
        raise ExportFailed("torch is not installed")

    monkeypatch.setattr("ragcli.embedding.loader.cached_onnx", broken_export)
    with pytest.warns(RuntimeWarning, match="torch is not installed"):
        embedder = load_embedder(None, cache_dir=tmp_path)
    assert isinstance(embedder, SentenceTransformerEmbedder)


def test_no_runtime_at_all_raises_model_not_found(monkeypatch, tmp_path: Path) -> None:
    def broken_export(*args, **kwargs):
        raise ExportFailed("torch is not installed")

    def no_torch(*args, **kwargs):
        raise ModelNotFound("sentence-transformers is not installed")

    monkeypatch.setattr("ragcli.embedding.loader.cached_onnx", broken_export)
    monkeypatch.setattr("ragcli.embedding.loader.SentenceTransformerEmbedder", no_torch)
    # With sentence-transformers installed the fallback is tried (and warned about) first.
    with warnings.catch_warnings(), pytest.raises(ModelNotFound, match="torch is not installed"):
        warnings.simplefilter("ignore")
        load_embedder(None, cache_dir=tmp_path)


def test_default_model_id_means_the_packaged_model(onnx_embedder, onnx_cache_dir) -> None:
    embedder = load_embedder(DEFAULT_MODEL_ID, cache_dir=onnx_cache_dir)
    assert embedder.model_id == DEFAULT_MODEL_ID
    assert embedder.fingerprint == onnx_embedder.fingerprint


def test_pooling_modes_on_a_hand_made_batch() -> None:
    tokens = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    assert pool(tokens, mask, ["mean"]).tolist() == [[2.0, 2.0]]
    assert pool(tokens, mask, ["cls", "max"]).tolist() == [[1.0, 0.0, 3.0, 4.0]]
    assert np.allclose(pool(tokens, mask, ["mean_sqrt_len"]), [[4.0 / 2**0.5, 4.0 / 2**0.5]])
    assert np.allclose(l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]])), [[0.6, 0.8], [0, 0]])


def _tiny_model_folder(root: Path, pooling: str = "mean") -> Path:
    """A sentence-transformers folder layout with stand-in weights (enough to fingerprint)."""
    (root / "1_Pooling").mkdir(parents=True)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "1_Pooling" / "config.json").write_text(
        json.dumps({f"pooling_mode_{pooling}_token{'s' if pooling != 'cls' else ''}": True})
    )
    (root / "sentence_bert_config.json").write_text('{"max_seq_length": 128}')
    (root / "model.safetensors").write_bytes(b"weights-1")
    (root / "README.md").write_text("not part of the fingerprint")
    return root


def test_fingerprint_follows_files_and_pooling(tmp_path: Path) -> None:
    folder = _tiny_model_folder(tmp_path / "model")
    config = read_model_config(folder)
    assert config.pooling == ("mean",) and not config.normalize and config.max_seq_length == 128
    plain = model_fingerprint(config)
    assert model_fingerprint(config, cache_dir=tmp_path / "cache") == plain
    assert model_fingerprint(config, cache_dir=tmp_path / "cache") == plain  # from the memo
    (folder / "README.md").write_text("edited")
    assert model_fingerprint(config, cache_dir=tmp_path / "cache") == plain
    (folder / "model.safetensors").write_bytes(b"weights-22")
    assert model_fingerprint(config, cache_dir=tmp_path / "cache") != plain
    cls_config = read_model_config(_tiny_model_folder(tmp_path / "cls", pooling="cls"))
    assert cls_config.pooling == ("cls",)
    assert model_fingerprint(cls_config) != plain
