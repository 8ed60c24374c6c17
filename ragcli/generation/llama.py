"""The local language model interface shared by answering, LLM retrieval and reranking.

`Generator` is what every stage codes against; `LlamaCppGenerator` (llama-cpp-python,
imported lazily) is the real one, and tests use deterministic fakes.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol, Sequence, TypedDict

from ragcli.errors import ModelNotFound

if TYPE_CHECKING:
    from ragcli.config import Settings


class Message(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


class Generator(Protocol):
    """A chat model. Messages are rendered with the model's own chat template."""

    model_id: str
    n_ctx: int

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Iterator[str]:
        """Yield the answer's text pieces as they are generated."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> str:
        """The whole answer text."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens the model's tokenizer makes of `text` (for context budgets)."""
        ...


GGUF_MAGIC = b"GGUF"

# Tokens kept free beyond what `count_tokens` counts in a prompt's message texts: the chat
# template's role markers, separators and the assistant header are not in those texts.
# SmolLM2's template adds 14 tokens to a system + user prompt (measured with llama.cpp's own
# prompt token count for the answer, selection and rerank prompts); templates that inject a
# preamble into the system message (Llama 3.x's dated one) need more, so 48 keeps every
# prompt budget (answer context, LLM selection, LLM reranking) inside the window.
TEMPLATE_MARGIN = 48


class LlamaCppGenerator:
    """A GGUF chat model run by llama-cpp-python, rendered with the model's own chat template.

    `llama_cpp` is imported when the model loads, never at module import. After every call
    `last_usage` holds ``{"prompt": n, "completion": m}`` tokens as llama.cpp counted them.

    Args:
        path: the GGUF file.
        n_ctx: context window in tokens.
        threads: CPU threads (None: all cores).
        seed: sampling seed, re-applied on every call so the same prompt gives the same text.

    Raises:
        ModelNotFound: the file is missing, not GGUF, or llama.cpp cannot load it.
    """

    def __init__(
        self, path: str | Path, *, n_ctx: int = 2048, threads: int | None = None, seed: int = 0
    ) -> None:
        self.path = check_gguf(Path(path))
        self.model_id = self.path.name
        self.n_ctx = n_ctx
        self.seed = seed
        stat = self.path.stat()
        self.fingerprint = f"{self.path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        self.last_usage: dict[str, int] = {"prompt": 0, "completion": 0}
        self._llama = _load_llama(self.path, n_ctx=n_ctx, threads=threads or os.cpu_count() or 1, seed=seed)
        self._grammars: dict[str, Any] = {}

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Iterator[str]:
        """Yield the answer's text pieces as llama.cpp generates them."""
        chunks = self._llama.create_chat_completion(
            list(messages),
            max_tokens=max_tokens,
            temperature=temperature,
            stop=list(stop) or None,
            grammar=self._grammar(grammar),
            seed=self.seed,
            stream=True,
        )
        prompt, finish = 0, None
        for chunk in chunks:
            choice = chunk["choices"][0]
            if not prompt:
                # The first chunk arrives right after prompt evaluation, when n_tokens is the prompt.
                prompt = self._llama.n_tokens
            finish = choice.get("finish_reason") or finish
            piece = choice["delta"].get("content")
            if piece:
                yield piece
        # The last sampled token is evaluated only when generation continues past it.
        completion = self._llama.n_tokens - prompt + (1 if finish == "length" else 0)
        self.last_usage = {"prompt": prompt, "completion": max(completion, 0)}

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> str:
        """The whole answer text (one non-streaming call)."""
        result = self._llama.create_chat_completion(
            list(messages),
            max_tokens=max_tokens,
            temperature=temperature,
            stop=list(stop) or None,
            grammar=self._grammar(grammar),
            seed=self.seed,
        )
        usage = result.get("usage") or {}
        self.last_usage = {
            "prompt": usage.get("prompt_tokens", 0),
            "completion": usage.get("completion_tokens", 0),
        }
        return result["choices"][0]["message"].get("content") or ""

    def count_tokens(self, text: str) -> int:
        """Tokens the model's tokenizer makes of `text` (no BOS)."""
        if not text:
            return 0
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _grammar(self, grammar: str | None):
        if grammar is None:
            return None
        if grammar not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[grammar] = LlamaGrammar.from_string(grammar, verbose=False)
        return self._grammars[grammar]


def check_gguf(path: Path) -> Path:
    """Return `path` if it is a readable GGUF file.

    Raises:
        ModelNotFound: missing, unreadable, or without the 4-byte ``GGUF`` magic.
    """
    path = path.expanduser()
    if not path.is_file():
        raise ModelNotFound(f"GGUF model {path} does not exist: pass --model PATH to a .gguf file")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as error:
        raise ModelNotFound(
            f"GGUF model {path} cannot be read ({error.strerror}): check its permissions"
        ) from error
    if magic != GGUF_MAGIC:
        raise ModelNotFound(
            f"{path} is not a GGUF model file: pass --model PATH to a .gguf file "
            "(convert other formats with llama.cpp's convert scripts)"
        )
    return path


def _load_llama(path: Path, *, n_ctx: int, threads: int, seed: int):
    """Build the `llama_cpp.Llama`; C-level output during the load goes to stderr, not stdout."""
    # llama.cpp's OpenMP threads spin while waiting by default; on a busy machine (an ingest
    # running beside a query) spinning threads starve each other and prompt evaluation was
    # measured 1.5-2.5x slower. A user's own setting wins; it only counts before the import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from llama_cpp import Llama
    except ImportError as error:
        raise ModelNotFound("llama-cpp-python is not installed: `pip install llama-cpp-python`") from error
    _route_llama_logs()
    with _half_built_model_freed_quietly():
        try:
            with stdout_to_stderr():
                return Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, seed=seed, verbose=False)
        except ValueError as error:
            message = f"llama.cpp cannot load {path} ({error}): is it a complete GGUF file?"
            error.__traceback__ = None  # frees the half-built model now, inside the guard
    raise ModelNotFound(message)


@contextmanager
def _half_built_model_freed_quietly() -> Iterator[None]:
    """Drop the one error llama-cpp-python 0.3.16 raises while freeing a model that failed to load.

    Its `LlamaModel.__init__` raises before setting `sampler`, so `LlamaModel.__del__` then
    raises AttributeError, which Python prints as "Exception ignored in ..." with a traceback
    under rag's one-line error (and pytest reports it as a warning). Only that exception, from
    that object, is dropped; any other goes to the previous hook.
    """
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        half_built = "LlamaModel" in repr(unraisable.object)  # the __del__ function
        if not (isinstance(unraisable.exc_value, AttributeError) and half_built):
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        import gc

        gc.collect()  # a model held in a reference cycle is freed here, not after the guard
        sys.unraisablehook = previous


@lru_cache(maxsize=1)
def _route_llama_logs() -> Any:
    """Send llama.cpp's log lines to the `ragcli.llama` logger (shown with `rag -v`).

    llama-cpp-python's own callback prints warnings such as "n_ctx_per_seq < n_ctx_train"
    even with verbose=False (0.3.16 maps llama.cpp's newer log levels with an old table).
    The callback object is cached: llama.cpp keeps a pointer to it for the process's life.
    """
    import llama_cpp

    logger = logging.getLogger("ragcli.llama")

    @llama_cpp.llama_log_callback
    def forward(level: int, text: bytes, user_data: Any) -> None:
        line = text.decode("utf-8", "replace").rstrip()
        if line:
            logger.info(line)

    llama_cpp.llama_log_set(forward, ctypes.c_void_p(0))
    return forward


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr for the block: native code may print there.

    Python-level output is flushed first so nothing written before the block is reordered.
    When stdout has no real descriptor (captured in tests), nothing is redirected.
    """
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def load_generator(
    model: str | None, settings: "Settings", *, n_ctx: int = 2048, threads: int | None = None, seed: int = 0
) -> LlamaCppGenerator:
    """Load the chat model: `model` (a GGUF path or a `rag models` name), else `settings.gguf_model`,
    else the packaged SmolLM2.

    Raises:
        ModelNotFound: the chosen file is missing or not GGUF, or the default package is absent.
    """
    from ragcli.generation.catalog import resolve_model

    path = resolve_model(model, settings)
    return LlamaCppGenerator(path, n_ctx=n_ctx, threads=threads, seed=seed)
