"""What a GGUF file says about itself, read from its header without loading the weights.

A GGUF file (versions 2 and 3) starts with ``GGUF``, a version, the tensor and metadata
counts, then the metadata key/values and the tensor descriptions (name, shape, type,
offset); the weights follow. Only the header is read: large arrays (the tokenizer's
vocabulary) are skipped, and the parameter count is the sum of the tensor shapes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"GGUF"
# Value types of the GGUF spec: id -> struct format (strings and arrays handled apart).
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
# general.file_type -> the quantisation name llama.cpp gives it (LLAMA_FTYPE_*).
FILE_TYPES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
}
# Arrays longer than this are skipped, not kept (tokenizer vocabularies, merges).
MAX_KEPT_ARRAY = 64


class NotGGUF(ValueError):
    """The file is not a GGUF file this reader understands (or it is truncated)."""


@dataclass(frozen=True)
class GGUFInfo:
    """The facts `rag models` shows and `--answer-style auto` decides on.

    Attributes:
        path: the file.
        size: file size in bytes.
        architecture: ``general.architecture`` (llama, qwen2, gemma3, ...).
        name: ``general.name`` when present.
        parameters: total parameters (sum over the tensor shapes).
        quantisation: from ``general.file_type`` (Q4_K_M, ...), None when absent.
        context_length: ``<architecture>.context_length``.
        chat_template: whether ``tokenizer.chat_template`` is present.
        size_label: ``general.size_label`` (e.g. "135M") when present.
    """

    path: Path
    size: int
    architecture: str | None
    name: str | None
    parameters: int
    quantisation: str | None
    context_length: int | None
    chat_template: bool
    size_label: str | None = None


class _Reader:
    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle

    def take(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        data = self.handle.read(size)
        if len(data) != size:
            raise NotGGUF("truncated GGUF header")
        return struct.unpack("<" + fmt, data)[0]

    def string(self) -> str:
        length = self.take("Q")
        if length > 1 << 26:
            raise NotGGUF("implausible string length in GGUF header")
        data = self.handle.read(length)
        if len(data) != length:
            raise NotGGUF("truncated GGUF header")
        return data.decode("utf-8", "replace")

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = self.take("I"), self.take("Q")
            if count <= MAX_KEPT_ARRAY:
                return [self.value(item) for _ in range(count)]
            self.skip(item, count)
            return None
        raise NotGGUF(f"unknown GGUF value type {kind}")

    def skip(self, kind: int, count: int) -> None:
        if kind in _SCALARS:
            self.handle.seek(struct.calcsize("<" + _SCALARS[kind]) * count, 1)
        elif kind == _STRING:
            for _ in range(count):
                self.handle.seek(self.take("Q"), 1)
        else:
            for _ in range(count):
                self.value(kind)


def read_gguf(path: str | Path) -> GGUFInfo:
    """Read a GGUF file's metadata and tensor shapes (never the weights).

    Raises:
        NotGGUF: not a GGUF file, an unsupported version, or a truncated header.
        OSError: the file cannot be read.
    """
    path = Path(path)
    with path.open("rb") as handle:
        if handle.read(4) != MAGIC:
            raise NotGGUF(f"{path} is not a GGUF file")
        reader = _Reader(handle)
        version = reader.take("I")
        if version not in (2, 3):
            raise NotGGUF(f"{path}: GGUF version {version} is not supported")
        tensors, count = reader.take("Q"), reader.take("Q")
        meta: dict[str, Any] = {}
        for _ in range(count):
            key = reader.string()
            meta[key] = reader.value(reader.take("I"))
        parameters = 0
        for _ in range(tensors):
            reader.string()
            dims = [reader.take("Q") for _ in range(reader.take("I"))]
            reader.take("I"), reader.take("Q")  # type, offset
            total = 1
            for dim in dims:
                total *= dim
            parameters += total
    arch = meta.get("general.architecture")
    file_type = meta.get("general.file_type")
    context = meta.get(f"{arch}.context_length") if arch else None
    return GGUFInfo(
        path=path,
        size=path.stat().st_size,
        architecture=arch,
        name=meta.get("general.name"),
        parameters=parameters,
        quantisation=FILE_TYPES.get(file_type) if file_type is not None else None,
        context_length=int(context) if context is not None else None,
        chat_template="tokenizer.chat_template" in meta,
        size_label=meta.get("general.size_label"),
    )


def write_tiny_gguf(path: str | Path, metadata: dict[str, Any], tensors: dict[str, tuple[int, ...]]) -> Path:
    """Write a minimal valid GGUF v3 header (strings, ints and f32 tensors; data zero-filled).

    For tests and fixtures: `read_gguf` reads it back exactly.
    """
    path = Path(path)
    out = bytearray(MAGIC + struct.pack("<IQQ", 3, len(tensors), len(metadata)))

    def text(value: str) -> bytes:
        data = value.encode("utf-8")
        return struct.pack("<Q", len(data)) + data

    for key, value in metadata.items():
        out += text(key)
        if isinstance(value, str):
            out += struct.pack("<I", _STRING) + text(value)
        elif isinstance(value, bool):
            out += struct.pack("<I?", 7, value)
        else:
            out += struct.pack("<IQ", 10, int(value))
    offset = 0
    for name, shape in tensors.items():
        out += text(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
        out += struct.pack("<IQ", 0, offset)
        count = 1
        for dim in shape:
            count *= dim
        offset += 4 * count
    out += b"\0" * ((-len(out)) % 32) + b"\0" * offset
    path.write_bytes(bytes(out))
    return path
