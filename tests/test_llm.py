"""The llama-cpp generator with the real packaged SmolLM2 GGUF (fast: ~0.3 s to load)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragcli.config import default_gguf_path, load_settings
from ragcli.errors import ModelNotFound
from ragcli.generation.llama import LlamaCppGenerator, check_gguf, load_generator

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
LONG_REQUEST = [{"role": "user", "content": "Write a long story about a lighthouse keeper and the sea."}]


@pytest.fixture(scope="module")
def generator() -> LlamaCppGenerator:
    return LlamaCppGenerator(default_gguf_path(), n_ctx=512, threads=2, seed=0)


@pytest.mark.model
def test_default_model_loads(generator):
    assert generator.model_id == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert generator.n_ctx == 512
    assert generator.count_tokens("hello world") == 2


@pytest.mark.model
def test_stream_yields_pieces_and_counts_tokens(generator):
    pieces = list(generator.stream(LONG_REQUEST, max_tokens=12))
    assert len(pieces) > 1 and all(isinstance(piece, str) for piece in pieces)
    assert generator.last_usage["completion"] == 12  # stopped by the token limit
    assert generator.last_usage["prompt"] > 5


@pytest.mark.model
def test_stream_and_complete_agree_at_temperature_zero(generator):
    streamed = "".join(generator.stream(QUESTION, max_tokens=12))
    assert generator.complete(QUESTION, max_tokens=12) == streamed


@pytest.mark.model
def test_the_models_chat_template_is_used(generator):
    """SmolLM2's template wraps turns in <|im_start|>; the prompt count proves it was applied."""
    text = QUESTION[0]["content"]
    generator.complete(QUESTION, max_tokens=1)
    template_tokens = generator.count_tokens(
        "<|im_start|>system\nYou are a helpful AI assistant named "
        "SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n"
    )
    assert generator.last_usage["prompt"] > generator.count_tokens(text) + template_tokens // 2
    assert "im_start" in generator._llama.metadata["tokenizer.chat_template"]


@pytest.mark.model
def test_grammar_constrains_output(generator):
    answer = generator.complete(QUESTION, max_tokens=8, grammar='root ::= "yes" | "no"')
    assert answer in {"yes", "no"}


def test_missing_model_is_one_clear_error(tmp_path):
    with pytest.raises(ModelNotFound, match="does not exist"):
        check_gguf(tmp_path / "nope.gguf")


def test_not_gguf_is_refused_before_llama_cpp(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ModelNotFound, match="is not a GGUF model file") as caught:
        load_generator(str(fake), load_settings())
    assert str(fake) in str(caught.value) and "\n" not in str(caught.value)


def test_truncated_gguf_is_model_not_found(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(ModelNotFound, match="cannot load"):
        LlamaCppGenerator(broken)


def test_settings_model_is_used_when_no_flag(tmp_path):
    settings = load_settings(gguf_model=str(tmp_path / "from-env.gguf"))
    with pytest.raises(ModelNotFound, match="from-env.gguf"):
        load_generator(None, settings)


@pytest.mark.model
def test_no_llama_cpp_noise_on_stdout():
    code = (
        "from ragcli.generation.llama import load_generator; from ragcli.config import load_settings\n"
        "g = load_generator(None, load_settings(), n_ctx=256, threads=1)\n"
        "''.join(g.stream([{'role': 'user', 'content': 'hi'}], max_tokens=3))\n"
    )
    # A safety net, not a timing check: loading the GGUF model takes long on a busy machine.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
