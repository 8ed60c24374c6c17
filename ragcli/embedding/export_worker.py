"""Export a transformer to ONNX: `python -m ragcli.embedding.export_worker DIR OUT`.

Runs in its own process (started by `ragcli.embedding.export.export_onnx`) so that the
parent never imports torch: that keeps 5-9 s of imports and ~1 GB of resident memory out
of the process that then serves queries or a long ingest, and a crash inside the exporter
cannot take the caller down. Exits 0 on success; on failure prints the reason on stderr and
exits 1. Only local files are read: the hub is switched off before transformers loads.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from pathlib import Path

OUTPUT_NAME = "token_embeddings"
# Largest tolerated difference between the torch and ONNX hidden states in the self-check.
_TOLERANCE = 1e-3


def main(argv: list[str] | None = None) -> int:
    """Export, self-check against torch, and report.

    Args:
        argv: `TRANSFORMER_DIR OUT_FILE`.

    Returns:
        The process exit code.
    """
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("transformer_dir", type=Path)
    parser.add_argument("out_file", type=Path)
    args = parser.parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        model, input_names = _load(args.transformer_dir)
        _export(model, input_names, args.out_file)
        error = _self_check(model, input_names, args.out_file)
    except Exception as exc:  # noqa: BLE001 - the parent needs the reason, whatever it is
        print(f"ONNX export failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if error > _TOLERANCE:
        print(f"ONNX export differs from torch by {error:.2e}", file=sys.stderr)
        return 1
    print(f"exported {args.out_file} (max difference to torch {error:.1e})", file=sys.stderr)
    return 0


def _load(transformer_dir: Path):  # noqa: ANN202 - torch types are not importable at module level
    import torch
    from transformers import AutoModel

    # Eager attention exports to plain MatMul/Softmax that onnxruntime runs 25% faster than
    # the decomposed SDPA graph (all-MiniLM-L6-v2, batch 8 x 200 tokens: 45-47 vs 36-37
    # texts/s, outputs equal to 2.4e-6). Models that do not take the argument load as before.
    try:
        model = AutoModel.from_pretrained(
            str(transformer_dir), local_files_only=True, attn_implementation="eager"
        )
    except (TypeError, ValueError):
        model = AutoModel.from_pretrained(str(transformer_dir), local_files_only=True)
    model.eval()
    accepted = inspect.signature(model.forward).parameters
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in accepted and getattr(model.config, "type_vocab_size", 0):
        names.append("token_type_ids")
    torch.set_grad_enabled(False)
    return model, names


def _wrapper(model, input_names: list[str]):  # noqa: ANN001, ANN202
    """Wrap the model so export sees named positional inputs and one output tensor.

    transformers 5 models must be called with keyword arguments, and torch.export needs
    a forward signature that matches `dynamic_shapes` one to one, hence two classes.
    """
    import torch

    class WithTypes(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001, ANN201
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    class WithoutTypes(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):  # noqa: ANN001, ANN201
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    wrapper = WithTypes() if "token_type_ids" in input_names else WithoutTypes()
    return wrapper.eval()


def _sample(input_names: list[str], batch: int, length: int, seed: int):  # noqa: ANN202
    import torch

    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, 2000, (batch, length), generator=generator)
    mask = torch.ones((batch, length), dtype=torch.int64)
    mask[0, length // 2 :] = 0  # a padded row, so the mask path is exercised
    values = {"input_ids": ids, "attention_mask": mask}
    values["token_type_ids"] = torch.zeros((batch, length), dtype=torch.int64)
    return tuple(values[name] for name in input_names)


def _export(model, input_names: list[str], out_file: Path) -> None:  # noqa: ANN001
    import torch

    dynamic = {0: torch.export.Dim.DYNAMIC, 1: torch.export.Dim.DYNAMIC}
    torch.onnx.export(
        _wrapper(model, input_names),
        _sample(input_names, batch=2, length=16, seed=0),
        str(out_file),
        input_names=input_names,
        output_names=[OUTPUT_NAME],
        dynamic_shapes=tuple(dynamic for _ in input_names),
        dynamo=True,
        external_data=True,  # weights in model.onnx.data, which onnxruntime maps cheaply
        optimize=True,
    )


def _self_check(model, input_names: list[str], out_file: Path) -> float:  # noqa: ANN001
    """Largest |torch - onnx| over real tokens, on a shape unlike the export sample."""
    import numpy as np
    import onnxruntime as ort

    tensors = _sample(input_names, batch=3, length=37, seed=1)
    expected = model(**dict(zip(input_names, tensors))).last_hidden_state.numpy()
    session = ort.InferenceSession(str(out_file), providers=["CPUExecutionProvider"])
    feed = {name: tensor.numpy() for name, tensor in zip(input_names, tensors)}
    (actual,) = session.run([OUTPUT_NAME], feed)
    real = tensors[1].numpy().astype(bool)
    return float(np.abs(actual - expected)[real].max())


if __name__ == "__main__":
    sys.exit(main())
