"""The local language model interface shared by answering, LLM retrieval and reranking.

`Generator` is what every stage codes against; `LlamaCppGenerator` (llama-cpp-python,
imported lazily) is the real one, and tests use deterministic fakes.
"""

from __future__ import annotations

from typing import Iterator, Protocol, Sequence, TypedDict


class Message(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


class Generator(Protocol):
    """A chat model. Messages are rendered with the model's own chat template."""

    model_id: str
    n_ctx: int

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 256, temperature: float = 0.0,
               stop: Sequence[str] = (), grammar: str | None = None) -> Iterator[str]:
        """Yield the answer's text pieces as they are generated."""
        ...

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 256, temperature: float = 0.0,
                 stop: Sequence[str] = (), grammar: str | None = None) -> str:
        """The whole answer text."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens the model's tokenizer makes of `text` (for context budgets)."""
        ...
