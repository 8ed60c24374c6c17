"""Build the ONNX graph of a BERT-family encoder from its safetensors weights, without torch.

Covers `model_type: "bert"` checkpoints (`BertModel` and `Bert*` heads, whose encoder weights
carry a `bert.` prefix) with absolute position embeddings and a gelu (erf or tanh form) or relu
activation: all-MiniLM-L6/L12-v2, multi-qa-MiniLM, paraphrase-MiniLM, BGE-small/base/large
(en, zh), E5-small/base/large (v2), GTE-small/base and every other BERT-architecture
sentence-transformers model. RoBERTa, XLM-R, DistilBERT, MPNet and the rest are exported with
torch (`pip install 'ragcli[torch]'`); `bert_unsupported` says why a model is not covered.

The graph is the computation of `transformers.BertModel` in standard ONNX ops (opset 17, for
LayerNormalization), with the same inputs and output as the torch export
(`input_ids`, `attention_mask`, `token_type_ids` -> `token_embeddings`), so pooling and
normalisation stay in numpy as before. Building it takes about a second: the weights are
copied once from the memory-mapped safetensors file into `model.onnx.data`.

With `qa_head=True` (a `BertForQuestionAnswering` checkpoint, for the extractive QA reader)
the graph ends in that model's `qa_outputs` Linear on the last hidden state instead, with
outputs `start_logits` and `end_logits`, each (batch, sequence).

Per layer, with H hidden, n heads of size d = H / n and additive mask bias M:

    q, k, v = x Wq + bq, x Wk + bk, x Wv + bv           split into n heads
    a = softmax(q k^T / sqrt(d) + M) v                   heads joined again
    x = LayerNorm(x + a Wo + bo)
    x = LayerNorm(x + act(x Wi + bi) Wo2 + bo2)
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ragcli.embedding.safetensors_file import read_safetensors
from ragcli.errors import ModelNotFound

OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "token_embeddings"
QA_OUTPUT_NAMES = ("start_logits", "end_logits")
QA_HEAD = "qa_outputs."
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")
_WEIGHTS = "model.safetensors"
_ALIGN = 4096  # offsets in the weights file on page boundaries, so they can be mapped


def bert_unsupported(transformer_dir: Path) -> str | None:
    """Why the builder cannot make this model's graph, or None when it can.

    Args:
        transformer_dir: the folder holding `config.json` and the weights.
    """
    config = _config(transformer_dir)
    if config is None:
        return f"{transformer_dir / 'config.json'} is missing or unreadable"
    kind = config.get("model_type")
    if kind != "bert":
        return f"model_type {kind!r} is not BERT"
    architectures = config.get("architectures") or ["BertModel"]
    if not all(str(name).startswith("Bert") for name in architectures):
        return f"architecture {', '.join(architectures)} is not a BERT encoder"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return f"position_embedding_type {config['position_embedding_type']!r} is not absolute"
    if config.get("hidden_act") not in ACTIVATIONS:
        return f"activation {config.get('hidden_act')!r} is not one of {', '.join(ACTIVATIONS)}"
    if config.get("is_decoder") or config.get("add_cross_attention"):
        return "decoder models are not covered"
    if not (transformer_dir / _WEIGHTS).is_file():
        return f"{transformer_dir / _WEIGHTS} is missing (pytorch_model.bin needs torch)"
    return None


def build_bert_onnx(
    transformer_dir: Path, out_file: Path, weights_name: str, *, qa_head: bool = False
) -> Path:
    """Write the encoder graph to `out_file` and its weights to `weights_name` beside it.

    Args:
        transformer_dir: the folder holding `config.json` and `model.safetensors`.
        out_file: the `.onnx` file to write.
        weights_name: file name of the external weights, in the same folder.
        qa_head: end in the `qa_outputs` start/end head (outputs `QA_OUTPUT_NAMES`) instead
            of the token embeddings.

    Returns:
        `out_file`.

    Raises:
        ModelNotFound: the model is not covered (see `bert_unsupported`) or its weights are
            incomplete.
    """
    import onnx

    reason = bert_unsupported(transformer_dir)
    if reason is not None:
        raise ModelNotFound(f"cannot build the ONNX graph of {transformer_dir}: {reason}")
    config = _config(transformer_dir) or {}
    builder = _Builder(config, _Weights(read_safetensors(transformer_dir / _WEIGHTS)))
    graph = builder.qa_graph() if qa_head else builder.graph()
    model = onnx.helper.make_model(
        graph,
        opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        producer_name="ragcli.bert_graph",
    )
    model.ir_version = 8  # readable by onnxruntime >= 1.10
    _write_external(model, builder.initializers, Path(out_file), weights_name)
    return Path(out_file)


def _config(transformer_dir: Path) -> dict[str, Any] | None:
    try:
        config = json.loads((transformer_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


class _Weights:
    """Tensor lookup that tolerates a `bert.` (or other head) prefix on the encoder names."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self._tensors = tensors
        anchor = "embeddings.word_embeddings.weight"
        found = [name for name in tensors if name.endswith(anchor)]
        if not found:
            raise ModelNotFound(f"the weights have no {anchor}: not a BERT checkpoint")
        self._prefix = min(found, key=len)[: -len(anchor)]

    def __call__(self, name: str) -> np.ndarray:
        try:
            return np.asarray(self._tensors[self._prefix + name], dtype=np.float32)
        except KeyError:
            raise ModelNotFound(f"the weights have no {self._prefix + name}") from None

    def head(self, name: str) -> np.ndarray:
        """A tensor of the task head, which sits beside the prefixed encoder (`qa_outputs.*`)."""
        try:
            return np.asarray(self._tensors[name], dtype=np.float32)
        except KeyError:
            raise ModelNotFound(f"the weights have no {name}: not a question-answering model") from None


class _Builder:
    """Accumulates nodes and initializers; one method per block of the encoder."""

    def __init__(self, config: dict[str, Any], weights: _Weights) -> None:
        self.config = config
        self.weights = weights
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.act = str(config["hidden_act"])
        self.with_types = int(config.get("type_vocab_size", 0) or 0) > 0
        self.nodes: list[Any] = []
        self.initializers: list[tuple[str, np.ndarray]] = []
        self._count = 0

    def graph(self) -> Any:
        """The encoder: output `token_embeddings` (batch, sequence, hidden)."""
        from onnx import TensorProto, helper

        self.nodes.append(helper.make_node("Identity", [self.encoder()], [OUTPUT_NAME]))
        output = helper.make_tensor_value_info(
            OUTPUT_NAME, TensorProto.FLOAT, ["batch", "sequence", self.hidden]
        )
        return helper.make_graph(self.nodes, "bert_encoder", self.inputs(), [output])

    def qa_graph(self) -> Any:
        """The encoder and the start/end head: outputs `QA_OUTPUT_NAMES`, each (batch, sequence)."""
        from onnx import TensorProto, helper

        weight = self.weights.head(QA_HEAD + "weight")
        if weight.ndim != 2 or weight.shape != (2, self.hidden):
            raise ModelNotFound(f"{QA_HEAD}weight has shape {weight.shape}, not (2, {self.hidden})")
        matmul = self.op(
            "MatMul", self.encoder(), self.tensor(QA_HEAD + "weight", np.ascontiguousarray(weight.T))
        )
        logits = self.op("Add", matmul, self.tensor(QA_HEAD + "bias", self.weights.head(QA_HEAD + "bias")))
        start, end = self.op("Split", logits, axis=-1, outputs=2)
        axis = self.const(np.array([-1], dtype=np.int64))
        for name, value in zip(QA_OUTPUT_NAMES, (start, end)):
            self.nodes.append(helper.make_node("Squeeze", [value, axis], [name]))
        outputs = [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "sequence"])
            for name in QA_OUTPUT_NAMES
        ]
        return helper.make_graph(self.nodes, "bert_question_answering", self.inputs(), outputs)

    def encoder(self) -> str:
        """The last hidden state (batch, sequence, hidden)."""
        x = self.embeddings()
        bias = self.mask_bias()
        for layer in range(int(self.config["num_hidden_layers"])):
            x = self.layer(f"encoder.layer.{layer}.", x, bias)
        return x

    def inputs(self) -> list[Any]:
        from onnx import TensorProto, helper

        names = INPUT_NAMES if self.with_types else INPUT_NAMES[:2]
        return [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"]) for name in names
        ]

    # -- blocks -------------------------------------------------------------------------

    def embeddings(self) -> str:
        words = self.op("Gather", self.weight("embeddings.word_embeddings.weight"), "input_ids")
        length = self.op("Shape", "input_ids", start=1, end=2)
        positions = self.op(
            "Slice",
            self.weight("embeddings.position_embeddings.weight"),
            self.const(np.array([0], dtype=np.int64)),
            length,
            self.const(np.array([0], dtype=np.int64)),
        )
        total = self.op("Add", words, positions)
        if self.with_types:
            types = self.op(
                "Gather", self.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"
            )
            total = self.op("Add", total, types)
        return self.layer_norm("embeddings.LayerNorm.", total)

    def mask_bias(self) -> str:
        """(1 - mask) * float32.min, shaped (batch, 1, 1, sequence), as transformers does."""
        mask = self.op("Cast", "attention_mask", to=1)
        inverted = self.op("Sub", self.const(np.array(1.0, dtype=np.float32)), mask)
        scaled = self.op("Mul", inverted, self.const(np.array(np.finfo(np.float32).min, dtype=np.float32)))
        return self.op("Unsqueeze", scaled, self.const(np.array([1, 2], dtype=np.int64)))

    def layer(self, prefix: str, x: str, bias: str) -> str:
        attention = self.attention(prefix + "attention.self.", x, bias)
        projected = self.linear(prefix + "attention.output.dense.", attention)
        x = self.layer_norm(prefix + "attention.output.LayerNorm.", self.op("Add", projected, x))
        inner = self.activation(self.linear(prefix + "intermediate.dense.", x))
        out = self.linear(prefix + "output.dense.", inner)
        return self.layer_norm(prefix + "output.LayerNorm.", self.op("Add", out, x))

    def attention(self, prefix: str, x: str, bias: str) -> str:
        size = self.hidden // self.heads
        split = self.const(np.array([0, 0, self.heads, size], dtype=np.int64))
        heads = {}
        for name, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])):
            projected = self.op("Reshape", self.linear(f"{prefix}{name}.", x), split)
            heads[name] = self.op("Transpose", projected, perm=perm)
        scores = self.op("MatMul", heads["query"], heads["key"])
        scale = self.const(np.array(math.sqrt(size), dtype=np.float32))
        scores = self.op("Add", self.op("Div", scores, scale), bias)
        context = self.op("MatMul", self.op("Softmax", scores, axis=-1), heads["value"])
        joined = self.op("Transpose", context, perm=[0, 2, 1, 3])
        return self.op("Reshape", joined, self.const(np.array([0, 0, self.hidden], dtype=np.int64)))

    def activation(self, x: str) -> str:
        if self.act == "relu":
            return self.op("Relu", x)
        half = self.const(np.array(0.5, dtype=np.float32))
        one = self.const(np.array(1.0, dtype=np.float32))
        if self.act == "gelu":  # exact: 0.5 x (1 + erf(x / sqrt 2))
            root2 = self.const(np.array(math.sqrt(2.0), dtype=np.float32))
            inner = self.op("Erf", self.op("Div", x, root2))
        else:  # tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cube = self.op("Mul", self.op("Mul", x, x), x)
            cubic = self.op("Add", x, self.op("Mul", cube, self.const(np.array(0.044715, np.float32))))
            root = self.const(np.array(math.sqrt(2.0 / math.pi), dtype=np.float32))
            inner = self.op("Tanh", self.op("Mul", cubic, root))
        return self.op("Mul", self.op("Mul", x, self.op("Add", inner, one)), half)

    def linear(self, prefix: str, x: str) -> str:
        """torch Linear: x W^T + b, with W stored transposed so MatMul reads it directly."""
        weight = self.weights(prefix + "weight")
        matmul = self.op("MatMul", x, self.tensor(prefix + "weight", np.ascontiguousarray(weight.T)))
        return self.op("Add", matmul, self.weight(prefix + "bias"))

    def layer_norm(self, prefix: str, x: str) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(prefix + "weight"),
            self.weight(prefix + "bias"),
            axis=-1,
            epsilon=self.eps,
        )

    # -- plumbing -----------------------------------------------------------------------

    def op(self, kind: str, *inputs: str, outputs: int = 1, **attributes: Any) -> Any:
        """Add a node; its output's name, or a tuple of `outputs` names when more than one."""
        from onnx import helper

        self._count += 1
        names = [f"{kind.lower()}_{self._count}" + (f"_{i}" if outputs > 1 else "") for i in range(outputs)]
        self.nodes.append(helper.make_node(kind, list(inputs), names, **attributes))
        return names[0] if outputs == 1 else tuple(names)

    def weight(self, name: str) -> str:
        return self.tensor(name, self.weights(name))

    def tensor(self, name: str, value: np.ndarray) -> str:
        self.initializers.append((name, value))
        return name

    def const(self, value: np.ndarray) -> str:
        self._count += 1
        return self.tensor(f"const_{self._count}", value)


def _write_external(
    model: Any, tensors: list[tuple[str, np.ndarray]], out_file: Path, weights_name: str
) -> None:
    """Small constants inside the graph, large tensors appended to the weights file."""
    from onnx import TensorProto, numpy_helper

    initializers = []
    with open(out_file.with_name(weights_name), "wb") as handle:
        for name, value in tensors:
            if value.nbytes < 1024:
                initializers.append(numpy_helper.from_array(value, name))
                continue
            offset = -handle.tell() % _ALIGN + handle.tell()
            handle.seek(offset)
            handle.write(np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes())
            tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=value.shape)
            tensor.data_location = TensorProto.EXTERNAL
            for key, item in (
                ("location", weights_name),
                ("offset", str(offset)),
                ("length", str(value.nbytes)),
            ):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, item
            initializers.append(tensor)
    model.graph.initializer.extend(initializers)
    out_file.write_bytes(model.SerializeToString())
