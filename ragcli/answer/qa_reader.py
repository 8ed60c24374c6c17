"""A short-line reader backed by a local extractive QA model folder (`--reader PATH`), and
`reader_for`, which picks the reader a setting names (built-in, none, or such a folder).

The folder is a BERT-family checkpoint tuned for extractive question answering (SQuAD or
SQuAD2), as Hugging Face's `BertForQuestionAnswering` saves it: `config.json` (model_type
bert), `model.safetensors` (the encoder plus the `qa_outputs` start/end head) and
`tokenizer.json`. Its graph is built without torch by `ragcli.embedding.bert_graph` (with the
QA head) and cached under the cache dir, one per folder fingerprint, like the embedder's.

Each quoted sentence is read as the context of a question+context pair (token types 0 and 1,
the context truncated to the model's length). The best span is the highest start+end logit
over context tokens with start <= end and at most `MAX_ANSWER_TOKENS` tokens; as in SQuAD2
it is kept only when it beats the [CLS] "no answer" score (start+end logit of token 0) by
more than the null margin. Its characters come from the tokenizer's offsets, and
`checked` still drops anything that is not verbatim in the quoted evidence.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragcli.answer.readers import Reader, Short, TypedReader, checked
from ragcli.answer.sentences import Sentence
from ragcli.errors import ModelNotFound

# Longest answer in tokens (the usual SQuAD setting): short lines are names, dates, numbers.
MAX_ANSWER_TOKENS = 30
# SQuAD2's rule with its usual threshold: a span must beat the no-answer score.
DEFAULT_NULL_MARGIN = 0.0
# The longest pair the reader encodes: enough for a quoted sentence, and BERT's usual limit.
MAX_PAIR_TOKENS = 384
_NEEDED = ("config.json", "model.safetensors", "tokenizer.json")
_GRAPH = "model.onnx"
_GRAPH_WEIGHTS = "model.onnx.data"
# Bump when the built QA graph changes, so cached graphs are rebuilt.
_GRAPH_VERSION = "qa-1"


def reader_for(
    name: str | None, *, cache_dir: Path | None = None, null_margin: float | None = None
) -> Reader | None:
    """The reader a setting names: None/"builtin" -> `TypedReader`, "none" -> no short line, else
    the folder of a local extractive QA model.

    Args:
        name: the setting.
        cache_dir: where a QA model's built graph is cached.
        null_margin: how far a QA model's best span must beat its no-answer score (None: the
            default, `ragcli.answer.qa_reader.DEFAULT_NULL_MARGIN`).

    Raises:
        ModelNotFound: the folder does not exist or is no QA model.
    """
    if name is None or name == "builtin":
        return TypedReader()
    if name == "none":
        return None
    margin = DEFAULT_NULL_MARGIN if null_margin is None else null_margin
    return load_qa_reader(name, cache_dir=cache_dir, null_margin=margin)


def load_qa_reader(
    path: str, *, cache_dir: Path | None = None, null_margin: float = DEFAULT_NULL_MARGIN
) -> "QAReader":
    """The reader of the QA model folder at `path`.

    Args:
        path: the model folder.
        cache_dir: where the built graph is cached; None builds it in a temporary folder.
        null_margin: how much the best span's score must beat the no-answer score by.

    Raises:
        ModelNotFound: the folder does not exist, lacks a needed file, or holds no BERT
            question-answering model.
    """
    from ragcli.embedding.bert_graph import bert_unsupported

    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ModelNotFound(f"reader {path}: no such folder (give a BERT QA model folder, or 'builtin')")
    missing = [name for name in _NEEDED if not (folder / name).is_file()]
    if missing:
        raise ModelNotFound(
            f"reader {path}: {', '.join(missing)} missing (a BERT QA model folder has {', '.join(_NEEDED)})"
        )
    reason = bert_unsupported(folder)
    if reason is not None:
        raise ModelNotFound(f"reader {path}: {reason}")
    graph = _cached_graph(folder.resolve(), cache_dir)
    return QAReader(folder, graph, null_margin=null_margin)


class QAReader:
    """Reads the short line with an extractive QA model (see the module docstring)."""

    def __init__(self, folder: Path, graph: Path, *, null_margin: float = DEFAULT_NULL_MARGIN) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from ragcli.embedding.onnx_runtime import session_options

        try:
            self._session = ort.InferenceSession(
                str(graph), sess_options=session_options(), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # noqa: BLE001 - onnxruntime's errors share no base class
            raise ModelNotFound(f"reader {folder}: cannot open {graph}: {exc}") from exc
        self._inputs = {item.name for item in self._session.get_inputs()}
        try:
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # noqa: BLE001 - tokenizers raises a bare Exception
            raise ModelNotFound(f"reader {folder}: unreadable tokenizer.json: {exc}") from exc
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(_max_length(folder), strategy="only_second")
        self.null_margin = null_margin

    def read(self, question: str, evidence: Sequence[Sentence]) -> Short | None:
        """The best span over the quoted sentences, or None when no answer wins."""
        best: tuple[float, Short] | None = None
        for sentence in evidence:
            found = self.span(question, sentence.text)
            if found is None:
                continue
            margin, start, end = found
            if best is None or margin > best[0]:
                best = (margin, Short(sentence.text[start:end].strip(" ,;:"), sentence))
        if best is None or best[0] <= self.null_margin:
            return None
        return checked(best[1], evidence)

    def span(self, question: str, context: str) -> tuple[float, int, int] | None:
        """(best span score minus the no-answer score, start char, end char) in `context`."""
        try:
            encoding = self._tokenizer.encode(question, context)
        except Exception:  # noqa: BLE001 - tokenizers raises a bare Exception: no room for context
            return None  # the question alone fills the model's length
        start_logits, end_logits = self.logits(encoding)
        in_context = np.array([sid == 1 for sid in encoding.sequence_ids])
        if not in_context.any():
            return None
        scores = start_logits[:, None] + end_logits[None, :]
        allowed = np.triu(np.ones_like(scores, dtype=bool)) & ~np.triu(
            np.ones_like(scores, dtype=bool), k=MAX_ANSWER_TOKENS
        )
        allowed &= in_context[:, None] & in_context[None, :]
        scores = np.where(allowed, scores, -np.inf)
        first, last = np.unravel_index(int(np.argmax(scores)), scores.shape)
        null = float(start_logits[0] + end_logits[0])
        offsets = encoding.offsets
        return float(scores[first, last]) - null, int(offsets[first][0]), int(offsets[last][1])

    def logits(self, encoding: Any) -> tuple[np.ndarray, np.ndarray]:
        """Start and end logits of one encoded pair."""
        feed = {
            "input_ids": np.asarray([encoding.ids], dtype=np.int64),
            "attention_mask": np.asarray([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.asarray([encoding.type_ids], dtype=np.int64),
        }
        start, end = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})
        return start[0], end[0]


def _max_length(folder: Path) -> int:
    """Tokens per pair: the model's position limit, at most `MAX_PAIR_TOKENS`."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return min(int(config.get("max_position_embeddings") or MAX_PAIR_TOKENS), MAX_PAIR_TOKENS)


def _cached_graph(folder: Path, cache_dir: Path | None) -> Path:
    """The QA graph of `folder`, built on first use into `cache_dir/onnx-qa/<fingerprint>/`."""
    from ragcli.embedding.bert_graph import build_bert_onnx
    from ragcli.embedding.model_files import ModelConfig, model_fingerprint
    from ragcli.locking import exclusive

    if cache_dir is None:
        cache_dir = Path(tempfile.mkdtemp(prefix="ragcli-qa-"))
    # The embedder's fingerprint of the folder's files; the graph version stands in for the
    # pooling, so QA graphs and embedding graphs of one folder never share a key.
    config = ModelConfig(folder, folder, _max_length(folder), False, (_GRAPH_VERSION,), False)
    fingerprint = model_fingerprint(config, cache_dir=cache_dir)
    root = Path(cache_dir) / "onnx-qa"
    final = root / fingerprint
    if (final / _GRAPH).is_file() and (final / _GRAPH_WEIGHTS).is_file():
        return final / _GRAPH
    root.mkdir(parents=True, exist_ok=True)
    with exclusive(root / f"{fingerprint}.lock"):
        if not (final / _GRAPH).is_file() or not (final / _GRAPH_WEIGHTS).is_file():
            staging = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
            try:
                build_bert_onnx(folder, staging / _GRAPH, _GRAPH_WEIGHTS, qa_head=True)
                if final.exists():
                    shutil.rmtree(final)
                os.replace(staging, final)
            except ModelNotFound as exc:
                raise ModelNotFound(f"reader {folder}: {exc}") from exc
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return final / _GRAPH
