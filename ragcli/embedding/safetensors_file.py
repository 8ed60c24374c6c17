"""Read a `model.safetensors` file into float32 numpy arrays, without torch.

The format is an 8-byte little-endian header length, a JSON header mapping each tensor name
to its dtype, shape and byte range, then the raw little-endian data. numpy reads it from a
memory map directly, so no third-party package is needed.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from ragcli.errors import ModelNotFound

_DTYPES = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "BF16": np.dtype("<u2"),  # widened to float32 by hand below
}
_MAX_HEADER = 100 << 20


def read_safetensors(file: Path) -> dict[str, np.ndarray]:
    """All tensors of a safetensors file; floating tensors as float32 arrays.

    Args:
        file: the `.safetensors` file.

    Returns:
        Tensor name -> array (a read-only view of the memory-mapped file where possible).

    Raises:
        ModelNotFound: the file is missing, truncated or not safetensors.
    """
    try:
        data = np.memmap(file, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as exc:
        raise ModelNotFound(f"cannot read {file}: {exc}") from exc
    header = _header(data, file)
    start = 8 + int(struct.unpack("<Q", data[:8].tobytes())[0])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor(data, start, name, entry, file)
    return tensors


def _header(data: np.ndarray, file: Path) -> dict:
    if len(data) < 8:
        raise ModelNotFound(f"{file} is not a safetensors file (too short)")
    size = int(struct.unpack("<Q", data[:8].tobytes())[0])
    if size > min(_MAX_HEADER, len(data) - 8):
        raise ModelNotFound(f"{file} is not a safetensors file (bad header length)")
    try:
        return json.loads(data[8 : 8 + size].tobytes())
    except ValueError as exc:
        raise ModelNotFound(f"{file} is not a safetensors file: {exc}") from exc


def _tensor(data: np.ndarray, start: int, name: str, entry: dict, file: Path) -> np.ndarray:
    dtype = _DTYPES.get(entry.get("dtype"))
    if dtype is None:
        raise ModelNotFound(f"{file}: tensor {name} has unsupported dtype {entry.get('dtype')}")
    begin, end = (start + int(offset) for offset in entry["data_offsets"])
    shape = tuple(int(dim) for dim in entry["shape"])
    if end > len(data) or end - begin != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise ModelNotFound(f"{file} is truncated or corrupt (tensor {name})")
    array = data[begin:end].view(dtype).reshape(shape)
    if entry["dtype"] == "BF16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    if array.dtype.kind == "f" and array.dtype != np.float32:
        return array.astype(np.float32)
    return array
