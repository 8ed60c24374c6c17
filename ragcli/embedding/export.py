"""Make and cache ONNX exports of a model, one per model fingerprint.

Layout under the caller's cache directory::

    onnx/<fingerprint>/model.onnx        transformer graph, output = token embeddings
    onnx/<fingerprint>/model.onnx.data   its weights ("external data")
    onnx/<fingerprint>/model.int8.onnx   optional dynamic int8 quantisation
    onnx/<fingerprint>/meta.json         what was exported, with which versions
    onnx/<fingerprint>.lock              fcntl lock: one exporter at a time

An export is written into a temporary folder and renamed into place, so a crash never
leaves a half-written model where a reader would pick it up.

Weights live beside the graph rather than inside it because onnxruntime then opens a
session about twice as fast (measured 0.15 s -> 0.06-0.08 s for all-MiniLM-L6-v2, same
outputs): the graph protobuf no longer carries 90 MB that must be parsed and copied. That
is most of a cold dense query's model start-up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ragcli.embedding.model_files import ModelConfig, model_fingerprint, read_model_config
from ragcli.errors import ModelNotFound
from ragcli.locking import exclusive

ONNX_FILE = "model.onnx"
WEIGHTS_FILE = "model.onnx.data"
INT8_FILE = "model.int8.onnx"
_EXPORT_TIMEOUT_S = 1800
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class ExportFailed(ModelNotFound):
    """The ONNX export or quantisation could not be made (e.g. torch is not installed)."""


def export_onnx(model_path: Path, out_dir: Path) -> Path:
    """Export a sentence-transformers model's transformer to `out_dir/model.onnx`.

    The export runs `python -m ragcli.embedding.export_worker` in a child process: torch
    (5-9 s to import, ~1 GB resident) is then never loaded into the caller, and the hub is
    disabled in the child's environment. Batch and sequence axes are dynamic; the child
    checks the ONNX output against torch before it succeeds.

    Args:
        model_path: a sentence-transformers folder.
        out_dir: an existing folder to write into.

    Returns:
        Path of the ONNX file.

    Raises:
        ExportFailed: the export did not succeed; the message carries the child's reason.
    """
    config = read_model_config(Path(model_path))
    out_file = Path(out_dir) / ONNX_FILE
    command = [
        sys.executable, "-m", "ragcli.embedding.export_worker",
        str(config.transformer_dir), str(out_file),
    ]
    try:
        done = subprocess.run(
            command, env=_child_env(), capture_output=True, text=True,
            timeout=_EXPORT_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportFailed(f"ONNX export of {config.path} did not finish: {exc}") from exc
    if done.returncode != 0 or not out_file.is_file():
        reason = _last_lines(done.stderr) or f"exit code {done.returncode}"
        raise ExportFailed(
            f"ONNX export of {config.path} failed ({reason}); install torch, onnx and "
            "onnxscript, or use the sentence-transformers runtime"
        )
    return out_file


def cached_onnx(
    config: ModelConfig, cache_dir: Path, *, fingerprint: str | None = None, int8: bool = False
) -> Path:
    """The cached ONNX file for a model, exporting (and quantising) it on first use.

    Args:
        config: the parsed model folder.
        cache_dir: the cache root; created when missing.
        fingerprint: the model's fingerprint, if already computed.
        int8: return the dynamically int8-quantised model instead of fp32.

    Returns:
        Path of the ONNX file.

    Raises:
        ExportFailed: the export or the quantisation failed.
    """
    fingerprint = fingerprint or model_fingerprint(config, cache_dir=cache_dir)
    root = Path(cache_dir) / "onnx"
    final = root / fingerprint
    wanted = final / (INT8_FILE if int8 else ONNX_FILE)
    if wanted.is_file() and (int8 or (final / WEIGHTS_FILE).is_file()):
        return wanted
    root.mkdir(parents=True, exist_ok=True)
    with exclusive(root / f"{fingerprint}.lock"):  # the second exporter waits, then reuses it
        if not (final / ONNX_FILE).is_file():  # another process may have made it meanwhile
            _publish_export(config, fingerprint, final)
        elif not (final / WEIGHTS_FILE).is_file():
            try:
                _move_weights_out(final / ONNX_FILE)
            except Exception:  # noqa: BLE001 - e.g. the weights file alone was deleted: export anew
                _publish_export(config, fingerprint, final)
        if int8 and not wanted.is_file():
            _publish_int8(final / ONNX_FILE, wanted)
    return wanted


def _publish_export(config: ModelConfig, fingerprint: str, final: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=final.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the published folder should not be
    try:
        export_onnx(config.path, staging)
        meta = {"fingerprint": fingerprint, "model": str(config.path), "output": "token_embeddings"}
        (staging / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        if final.exists():  # a folder left without its model (deleted by hand): replace it
            shutil.rmtree(final)
        os.replace(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _move_weights_out(model_file: Path) -> None:
    """Rewrite a single-file export (as earlier ragcli versions made) with external weights."""
    import onnx

    staging = Path(tempfile.mkdtemp(prefix=".weights-", dir=model_file.parent))
    try:
        model = onnx.load(str(model_file))
        onnx.save_model(model, str(staging / ONNX_FILE), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=WEIGHTS_FILE, size_threshold=1024)
        # The weights first: a reader that sees the new graph must find them.
        os.replace(staging / WEIGHTS_FILE, model_file.with_name(WEIGHTS_FILE))
        os.replace(staging / ONNX_FILE, model_file)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation of the weights (activations stay float at run time)."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ExportFailed(f"int8 quantisation needs onnxruntime and onnx: {exc}") from exc
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        quantize_dynamic(str(source), str(staging), weight_type=QuantType.QInt8)
        os.replace(staging, target)
    except Exception as exc:  # noqa: BLE001 - quantize_dynamic raises many unrelated types
        raise ExportFailed(f"int8 quantisation of {source} failed: {exc}") from exc
    finally:
        staging.unlink(missing_ok=True)


def _child_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    # The child must import this same ragcli, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return env


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return " | ".join(lines[-count:])
