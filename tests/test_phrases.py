"""The rule-based noun-phrase chunker behind the short answers of what/which questions."""

from __future__ import annotations

import pytest

from ragcli.answer.phrases import noun_phrases, word_classes, words_of


def phrases(text: str) -> list[str]:
    words = words_of(text)
    return [text[words[i].start : words[j - 1].end] for i, j in noun_phrases(text, words)]


def classes(text: str) -> dict[str, str]:
    words = words_of(text)
    return {w.text: c for w, c in zip(words, word_classes(words))}


def test_participles_modify_after_a_determiner_and_are_verbs_after_a_noun():
    tagged = classes(
        "The first recorded settlement was found. Twigg suggested that the affected region grew."
    )
    assert tagged["recorded"] == "mod" and tagged["affected"] == "mod"
    assert tagged["suggested"] == "verb" and tagged["found"] == "verb" and tagged["grew"] == "verb"


def test_verbs_by_position():
    tagged = classes("The prosecution proposes a plea bargain to settle it, and it is incumbent upon them.")
    assert tagged["proposes"] == "verb" and tagged["settle"] == "verb" and tagged["incumbent"] == "verb"
    assert tagged["bargain"] == "open" and tagged["prosecution"] == "open"


def test_phrases_stop_at_punctuation_verbs_and_prepositions():
    found = phrases("The first recorded settlement in Newcastle was Pons Aelius, a Roman fort and bridge.")
    assert "The first recorded settlement" in found and "Pons Aelius" in found
    assert "a Roman fort and bridge" in found and "Pons Aelius, a Roman fort" not in found


def test_of_and_and_join_phrases_which_are_offered_alone_too():
    found = phrases("Cantor thought it was a combination of anthrax and other pandemics.")
    assert {
        "a combination",
        "a combination of anthrax",
        "a combination of anthrax and other pandemics",
    } <= set(found)
    assert "other pandemics" in found


@pytest.mark.parametrize(
    "text",
    [
        "The first two highways successfully opened up the rainforest and led to increased settlement.",
        "Ergänzungsschulen are run by private individuals or, rarely, religious groups.",
        "北京 is the capital; Zürich is not.",
    ],
)
def test_every_phrase_is_complete(text):
    from ragcli.answer.evidence import DANGLING

    for phrase in phrases(text):
        words = phrase.split()
        assert words[-1].lower() not in DANGLING and words[0].lower() not in DANGLING - {"a", "an", "the"}
        assert "," not in phrase and ";" not in phrase


def test_comparisons_and_verbs_before_numbers_end_a_phrase():
    assert "a natural number" in phrases("A prime is a natural number greater than 1.")
    assert "natural number greater" not in " | ".join(phrases("A prime is a natural number greater than 1."))
    assert classes("The Act of 1996 recognises two categories.")["recognises"] == "verb"


def test_a_word_between_a_noun_and_a_determiner_is_a_verb_unless_punctuation_parts_them():
    tagged = classes("Paleoclimatologists measure the ratio of oxygen-18 in shells.")
    assert tagged["measure"] == "verb"
    text = "When considering computational problems, a problem instance is a string."
    words = words_of(text)
    assert dict(zip([w.text for w in words], word_classes(words, text)))["problems"] == "open"
    assert "computational problems" in phrases(text)


def test_quantifiers_and_adverbs_end_a_phrase():
    found = phrases("Candidate theories such as string theory exist somewhere, and either works twice.")
    assert "Candidate theories" in found and not any(p.endswith(("such", "somewhere")) for p in found)
    assert "either" not in found
