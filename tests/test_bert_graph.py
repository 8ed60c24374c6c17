"""The torch-free BERT graph builder against sentence-transformers / transformers.

Three references, so the check runs with and without torch:
- the committed vectors of fixtures/embedding-reference.json (made by
  fixtures/make_embedding_reference.py with sentence-transformers): always;
- sentence-transformers itself, live, when it is importable;
- transformers' BertModel on small random models covering each activation, a `bert.`
  prefix and fp16 weights, when torch is importable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ragcli.embedding import OnnxEmbedder, default_model_path, load_embedder, read_model_config
from ragcli.embedding.bert_graph import bert_unsupported, build_bert_onnx
from ragcli.embedding.export import WEIGHTS_FILE, cached_onnx
from ragcli.embedding.safetensors_file import read_safetensors
from ragcli.errors import ModelNotFound

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REFERENCE = json.loads((FIXTURES / "embedding-reference.json").read_text(encoding="utf-8"))
# Imports of these are refused in the child processes below, as if they were not installed.
HIDDEN = ("torch", "sentence_transformers", "transformers", "onnxscript")
HIDE = f"""
import sys
for name in {HIDDEN!r}:
    sys.modules[name] = None
"""


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> OnnxEmbedder:
    cache = tmp_path_factory.mktemp("bert-graph-cache")
    embedder = load_embedder(None, cache_dir=cache)
    assert isinstance(embedder, OnnxEmbedder)
    meta = json.loads(next((cache / "onnx").glob("*/meta.json")).read_text())
    assert meta["builder"] == "ragcli.bert_graph"
    return embedder


def test_vectors_equal_the_committed_reference(built) -> None:
    vectors = built.embed(REFERENCE["texts"])
    assert cosines(vectors, np.array(REFERENCE["vectors"], dtype=np.float32)).min() >= 0.9999


def test_vectors_equal_live_sentence_transformers(built) -> None:
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(default_model_path(), device="cpu", local_files_only=True)
    texts = REFERENCE["texts"] + ["Ünïcödé ß ø å", "日本語のテキストも少し。", "a " * 2000]
    reference = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert cosines(built.embed(texts, batch_size=3), reference).min() >= 0.9999


def test_over_long_text_is_truncated(built) -> None:
    long_text = REFERENCE["texts"][-1]
    assert len(built.token_offsets(long_text)) > built.max_tokens
    extended = long_text + " and then a great deal more that the model never reads" * 20
    np.testing.assert_allclose(built.embed([long_text]), built.embed([extended]), atol=1e-6)


def test_graph_has_external_weights_and_standard_ops(tmp_path: Path) -> None:
    import onnx

    config = read_model_config(Path(default_model_path()))
    graph = build_bert_onnx(config.transformer_dir, tmp_path / "model.onnx", WEIGHTS_FILE)
    assert (tmp_path / WEIGHTS_FILE).stat().st_size > 80_000_000
    assert graph.stat().st_size < 200_000
    model = onnx.load(str(graph), load_external_data=False)
    assert {op.domain for op in model.opset_import} == {""}
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask", "token_type_ids"]
    assert [o.name for o in model.graph.output] == ["token_embeddings"]
    onnx.checker.check_model(str(graph))


def test_export_without_torch_in_a_child_process(tmp_path: Path) -> None:
    """The default model is prepared and matches the reference with torch unimportable."""
    code = (
        HIDE
        + f"""
import json, numpy as np
from pathlib import Path
from ragcli.embedding import load_embedder, OnnxEmbedder
reference = json.loads(Path({str(FIXTURES / "embedding-reference.json")!r}).read_text())
embedder = load_embedder(None, cache_dir=Path({str(tmp_path)!r}))
assert isinstance(embedder, OnnxEmbedder)
vectors = embedder.embed(reference["texts"])
expected = np.array(reference["vectors"], dtype=np.float32)
print(float(((vectors * expected).sum(1) / np.linalg.norm(expected, axis=1)).min()))
leaked = [name for name in sys.modules if name.split(".")[0] in {HIDDEN!r} and sys.modules[name]]
assert not leaked, leaked
"""
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) >= 0.9999


def _non_bert_copy(tmp_path: Path, model_type: str) -> Path:
    folder = tmp_path / f"{model_type}-model"
    shutil.copytree(default_model_path(), folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type=model_type, architectures=["RobertaModel"])
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_non_bert_model_without_torch_names_the_extra(tmp_path: Path) -> None:
    folder = _non_bert_copy(tmp_path, "roberta")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Lighthouses warn ships away from rocks.")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        RAG_CACHE_DIR=str(tmp_path / "cache"),
    )
    rag = shutil.which("rag") or "rag"
    done = subprocess.run(
        [rag, "ingest", str(docs), "--index", str(tmp_path / "index"), "--embed-model", str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "pip install 'ragcli[torch]'" in done.stderr, done.stderr
    assert "model_type 'roberta' is not BERT" in done.stderr
    assert "Traceback" not in done.stderr and len(lines) <= 3, done.stderr


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"model_type": "roberta"}, "model_type 'roberta' is not BERT"),
        ({"architectures": ["DistilBertModel"]}, "architecture DistilBertModel is not a BERT encoder"),
        ({"position_embedding_type": "relative_key"}, "is not absolute"),
        ({"hidden_act": "swish"}, "activation 'swish'"),
    ],
)
def test_uncovered_architectures_are_refused_with_the_reason(tmp_path: Path, change, reason) -> None:
    config = json.loads((Path(default_model_path()) / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert reason in bert_unsupported(tmp_path)
    with pytest.raises(ModelNotFound, match="cannot build the ONNX graph"):
        build_bert_onnx(tmp_path, tmp_path / "model.onnx", WEIGHTS_FILE)


def test_truncated_safetensors_is_a_clear_error(tmp_path: Path) -> None:
    source = Path(default_model_path()) / "model.safetensors"
    broken = tmp_path / "model.safetensors"
    broken.write_bytes(source.read_bytes()[:1_000_000])
    with pytest.raises(ModelNotFound, match="truncated or corrupt"):
        read_safetensors(broken)


def test_cached_graph_is_reused_and_announced_once(tmp_path: Path) -> None:
    config = read_model_config(Path(default_model_path()))
    said: list[str] = []
    first = cached_onnx(config, tmp_path, notify=said.append)
    again = cached_onnx(config, tmp_path, notify=said.append)
    assert first == again and len(said) == 1 and "preparing the embedding model" in said[0]


# -- small random BERTs through transformers (torch needed to make and run them) ------------


@pytest.mark.parametrize("variant", ["gelu", "relu", "gelu_new", "prefixed", "fp16"])
def test_random_bert_matches_transformers(tmp_path: Path, variant: str) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import onnxruntime as ort

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=64,
        type_vocab_size=2,
        hidden_act=variant if variant in ("relu", "gelu_new") else "gelu",
    )
    model = (transformers.BertForMaskedLM if variant == "prefixed" else transformers.BertModel)(config)
    model.eval()
    if variant == "fp16":
        model.half().save_pretrained(tmp_path, safe_serialization=True)
        model.float()
    else:
        model.save_pretrained(tmp_path, safe_serialization=True)
    graph = build_bert_onnx(tmp_path, tmp_path / "model.onnx", WEIGHTS_FILE)
    ids = torch.randint(1, 120, (3, 11))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    types = torch.zeros_like(ids)
    types[2, 5:] = 1
    encoder = model.bert if variant == "prefixed" else model
    if variant == "fp16":
        encoder = encoder.half().float()  # the same rounded weights the graph reads
    with torch.no_grad():
        expected = encoder(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state.numpy()
    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    (actual,) = session.run(
        None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": types.numpy()}
    )
    real = mask.numpy().astype(bool)
    np.testing.assert_allclose(actual[real], expected[real], atol=2e-4)


def test_non_bert_model_is_exported_with_torch_when_the_extra_is_installed(tmp_path: Path) -> None:
    """A small random DistilBERT sentence-transformers folder takes the torch export path."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    st = pytest.importorskip("sentence_transformers")

    # The exporter's self-check feeds token ids up to 2,000: the vocabulary must reach that far.
    words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *"the lamp of a lighthouse warns ships".split(),
        *(f"filler{n}" for n in range(2000)),
    ]
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "vocab.txt").write_text("\n".join(words) + "\n")
    torch.manual_seed(0)
    config = transformers.DistilBertConfig(
        vocab_size=len(words), dim=32, n_layers=2, n_heads=4, hidden_dim=48, max_position_embeddings=64
    )
    transformers.DistilBertModel(config).save_pretrained(raw, safe_serialization=True)
    transformers.BertTokenizerFast(vocab_file=str(raw / "vocab.txt")).save_pretrained(raw)
    with warnings.catch_warnings():  # sentence-transformers 6 moved these; the old path still works
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import models
    encoder = models.Transformer(str(raw), max_seq_length=32)
    pooling = models.Pooling(32, "mean")
    folder = tmp_path / "st-model"
    st.SentenceTransformer(modules=[encoder, pooling, models.Normalize()], device="cpu").save(str(folder))
    assert "model_type 'distilbert'" in bert_unsupported(folder)

    embedder = load_embedder(str(folder), cache_dir=tmp_path / "cache")
    assert isinstance(embedder, OnnxEmbedder)
    meta = json.loads(next((tmp_path / "cache" / "onnx").glob("*/meta.json")).read_text())
    assert meta["builder"] == "torch.onnx"
    texts = ["the lamp of a lighthouse", "ships", "the the the warns"]
    reference = st.SentenceTransformer(str(folder), device="cpu").encode(texts, normalize_embeddings=True)
    assert cosines(embedder.embed(texts), reference).min() >= 0.9999


def test_an_older_export_of_a_bert_model_is_rebuilt(tmp_path) -> None:
    """A cache made by torch (meta.json without builder) or an older builder is remade."""
    config = read_model_config(Path(default_model_path()))
    first = cached_onnx(config, tmp_path)
    meta_file = first.parent / "meta.json"
    meta = json.loads(meta_file.read_text())
    assert meta["builder"] == "ragcli.bert_graph" and meta["builder_version"] >= 2
    # What a torch export of earlier versions left: no builder fields, an int8 file beside it.
    meta_file.write_text(json.dumps({"fingerprint": meta["fingerprint"], "output": "token_embeddings"}))
    (first.parent / "model.int8.onnx").write_bytes(b"stale")
    steps: list[str] = []
    again = cached_onnx(config, tmp_path, notify=steps.append)
    assert again == first and steps and "preparing" in steps[0]
    assert json.loads(meta_file.read_text()) == meta
    assert not (first.parent / "model.int8.onnx").exists()
    assert cached_onnx(config, tmp_path, notify=steps.append) == first and len(steps) == 1
    embedder = OnnxEmbedder(config, again, model_id="m", fingerprint=meta["fingerprint"])
    vectors = embedder.embed(REFERENCE["texts"])
    assert cosines(vectors, np.array(REFERENCE["vectors"], dtype=np.float32)).min() >= 0.9999
