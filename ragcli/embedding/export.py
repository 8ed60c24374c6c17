"""Make and cache ONNX exports of a model, one per model fingerprint.

Layout under the caller's cache directory::

    onnx/<fingerprint>/model.onnx        transformer graph, output = token embeddings
    onnx/<fingerprint>/model.onnx.data   its weights ("external data")
    onnx/<fingerprint>/model.int8-per-channel.onnx   optional dynamic int8 quantisation
    onnx/<fingerprint>/meta.json         what was exported, with which versions
    onnx/<fingerprint>.lock              fcntl lock: one exporter at a time

An export is written into a temporary folder and renamed into place, so a crash never
leaves a half-written model where a reader would pick it up. BERT-family models are built
without torch by `ragcli.embedding.bert_graph` (about a second); other architectures are
exported by torch, which needs the `[torch]` extra.

Weights live beside the graph rather than inside it because onnxruntime then opens a
session about twice as fast (measured 0.15 s -> 0.06-0.08 s for all-MiniLM-L6-v2, same
outputs): the graph protobuf no longer carries 90 MB that must be parsed and copied. That
is most of a cold dense query's model start-up.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from ragcli.embedding.bert_graph import bert_unsupported, build_bert_onnx
from ragcli.embedding.model_files import ModelConfig, model_fingerprint, read_model_config
from ragcli.errors import ModelNotFound
from ragcli.locking import exclusive

ONNX_FILE = "model.onnx"
WEIGHTS_FILE = "model.onnx.data"
# Per channel: one scale per output column of each weight matrix. Per tensor (one scale per
# matrix) lost 0.011 nDCG@10 on Cranfield against fp32; per channel 0.003, at the same speed
# (benchmarks/int8_quality.py, docs/guide/embedding.md).
INT8_FILE = "model.int8-per-channel.onnx"
_EXPORT_TIMEOUT_S = 1800
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
TORCH_EXTRA = "pip install 'ragcli[torch]'"
# How the graph was made, recorded in meta.json.
BUILDER_BERT = "ragcli.bert_graph"
BUILDER_TORCH = "torch.onnx"
# Bumped when the built graph changes; a cached export of a BERT-family model made by torch
# or by another builder version is rebuilt (about a second) so every cache runs the same graph.
BUILDER_VERSION = 2


class ExportFailed(ModelNotFound):
    """The ONNX export or quantisation could not be made (e.g. torch is not installed)."""


def export_onnx(model_path: Path, out_dir: Path) -> Path:
    """Make `out_dir/model.onnx` (+ `model.onnx.data`) for a sentence-transformers model.

    BERT-family models (see `ragcli.embedding.bert_graph`) are built directly from their
    safetensors weights in about a second, in this process, without torch. Other models are
    exported by torch in a child process (`torch_export`), which needs the `[torch]` extra.

    Args:
        model_path: a sentence-transformers folder.
        out_dir: an existing folder to write into.

    Returns:
        Path of the ONNX file.

    Raises:
        ExportFailed: the graph could not be made; the message says why and what to install.
    """
    config = read_model_config(Path(model_path))
    out_file = Path(out_dir) / ONNX_FILE
    if graph_builder(config) == BUILDER_BERT:
        try:
            return build_bert_onnx(config.transformer_dir, out_file, WEIGHTS_FILE)
        except ModelNotFound as exc:
            raise ExportFailed(str(exc)) from exc
    return torch_export(config, out_file)


def graph_builder(config: ModelConfig) -> str:
    """Which way `export_onnx` makes this model's graph: BUILDER_BERT or BUILDER_TORCH."""
    return BUILDER_BERT if bert_unsupported(config.transformer_dir) is None else BUILDER_TORCH


def torch_export(config: ModelConfig, out_file: Path) -> Path:
    """Export with torch in a child process (`python -m ragcli.embedding.export_worker`).

    torch (5-9 s to import, ~1 GB resident) is then never loaded into the caller, and the
    hub is disabled in the child's environment. Batch and sequence axes are dynamic; the
    child checks the ONNX output against torch before it succeeds.

    Raises:
        ExportFailed: torch is not installed, or the export did not succeed.
    """
    missing = [
        name for name in ("torch", "transformers", "onnxscript") if importlib.util.find_spec(name) is None
    ]
    if missing:
        reason = bert_unsupported(config.transformer_dir)
        raise ExportFailed(
            f"{config.path} needs torch to be converted for onnxruntime ({reason}; "
            f"{', '.join(missing)} not installed): run {TORCH_EXTRA}"
        )
    command = [
        sys.executable,
        "-m",
        "ragcli.embedding.export_worker",
        str(config.transformer_dir),
        str(out_file),
    ]
    try:
        done = subprocess.run(
            command,
            env=_child_env(),
            capture_output=True,
            text=True,
            timeout=_EXPORT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportFailed(f"ONNX export of {config.path} did not finish: {exc}") from exc
    if done.returncode != 0 or not out_file.is_file():
        reason = _last_lines(done.stderr) or f"exit code {done.returncode}"
        raise ExportFailed(
            f"ONNX export of {config.path} failed ({reason}); run {TORCH_EXTRA}, "
            "or use the sentence-transformers runtime"
        )
    return out_file


def cached_onnx(
    config: ModelConfig,
    cache_dir: Path,
    *,
    fingerprint: str | None = None,
    int8: bool = False,
    notify: Callable[[str], None] | None = None,
) -> Path:
    """The cached ONNX file for a model, exporting (and quantising) it on first use.

    Args:
        config: the parsed model folder.
        cache_dir: the cache root; created when missing.
        fingerprint: the model's fingerprint, if already computed.
        int8: return the dynamically int8-quantised model instead of fp32.
        notify: called with a short description before a slow first-use step (building
            or exporting the graph, quantising), so a terminal can say what is happening.

    Returns:
        Path of the ONNX file.

    Raises:
        ExportFailed: the export or the quantisation failed.
    """
    fingerprint = fingerprint or model_fingerprint(config, cache_dir=cache_dir)
    root = Path(cache_dir) / "onnx"
    final = root / fingerprint
    wanted = final / (INT8_FILE if int8 else ONNX_FILE)
    if wanted.is_file() and (int8 or (final / WEIGHTS_FILE).is_file()) and _current(config, final):
        return wanted
    root.mkdir(parents=True, exist_ok=True)
    tell = notify or (lambda _message: None)
    with exclusive(root / f"{fingerprint}.lock"):  # the second exporter waits, then reuses it
        if not (final / ONNX_FILE).is_file():  # another process may have made it meanwhile
            tell(_first_use_step(config))
            _publish_export(config, fingerprint, final)
        elif not _current(config, final):  # an older export: rebuild it (int8 follows)
            tell(_first_use_step(config))
            _publish_export(config, fingerprint, final)
        elif not (final / WEIGHTS_FILE).is_file():
            try:
                _move_weights_out(final / ONNX_FILE)
            except Exception:  # noqa: BLE001 - e.g. the weights file alone was deleted: export anew
                _publish_export(config, fingerprint, final)
        if int8 and not wanted.is_file():
            tell("quantising the embedding model to int8 (first use, once per model)")
            _publish_int8(final / ONNX_FILE, wanted)
    return wanted


def _publish_export(config: ModelConfig, fingerprint: str, final: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=final.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the published folder should not be
    try:
        export_onnx(config.path, staging)
        meta = {
            "fingerprint": fingerprint,
            "model": str(config.path),
            "output": "token_embeddings",
            "builder": graph_builder(config),
            "builder_version": BUILDER_VERSION,
        }
        (staging / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        if final.exists():  # a folder left without its model (deleted by hand): replace it
            shutil.rmtree(final)
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _current(config: ModelConfig, folder: Path) -> bool:
    """False for a BERT-family export made by torch or an older builder (see BUILDER_VERSION).

    Exports made by torch for other architectures are kept: remaking them needs torch and
    ~20 s, and their graph does not depend on this module.
    """
    if graph_builder(config) != BUILDER_BERT:
        return True
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict):
        return False
    return meta.get("builder") == BUILDER_BERT and meta.get("builder_version") == BUILDER_VERSION


def _first_use_step(config: ModelConfig) -> str:
    if graph_builder(config) == BUILDER_BERT:
        return "preparing the embedding model for onnxruntime (first use, once per model)"
    return "exporting the embedding model to ONNX with torch (first use, once per model; ~20 s)"


def _move_weights_out(model_file: Path) -> None:
    """Rewrite a single-file export (as earlier ragcli versions made) with external weights."""
    import onnx

    staging = Path(tempfile.mkdtemp(prefix=".weights-", dir=model_file.parent))
    try:
        model = onnx.load(str(model_file))
        onnx.save_model(
            model,
            str(staging / ONNX_FILE),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=WEIGHTS_FILE,
            size_threshold=1024,
        )
        # The weights first: a reader that sees the new graph must find them.
        os.replace(staging / WEIGHTS_FILE, model_file.with_name(WEIGHTS_FILE))
        os.replace(staging / ONNX_FILE, model_file)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation of the weights, per channel (activations stay float at run time)."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ExportFailed(f"int8 quantisation needs onnxruntime and onnx: {exc}") from exc
    import logging

    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    root = logging.getLogger()
    level = root.level
    try:
        # It advises pre-processing on the root logger (a `rag:` line on the user's terminal):
        # advice to ragcli's developers, not to its users.
        root.setLevel(logging.ERROR)
        quantize_dynamic(str(source), str(staging), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(staging, target)
    except Exception as exc:  # noqa: BLE001 - quantize_dynamic raises many unrelated types
        raise ExportFailed(f"int8 quantisation of {source} failed: {exc}") from exc
    finally:
        root.setLevel(level)
        staging.unlink(missing_ok=True)


def _child_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    # The child must import this same ragcli, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return " | ".join(lines[-count:])
