"""The evidence quoted under a generated answer is the evidence style's, cited in the generated
answer's numbering: a passage the model's sources lack joins them."""

from __future__ import annotations

from ragcli.answer.context import Source
from ragcli.answer.evidence import Evidence
from ragcli.answer.quoting import quoted_evidence, renumbered
from ragcli.answer.sentences import Sentence


def source(number: int, path: str, text: str) -> Source:
    return Source(number, path, None, 1.0, text, (number,))


def test_quotes_are_cited_in_the_models_numbering_and_a_missing_passage_joins():
    model_sources = [source(1, "a.md", "Tea grows on hills."), source(2, "b.md", "Green tea is steamed.")]
    read = (source(1, "b.md", "Green tea is steamed."), source(2, "c.md", "Black tea is oxidised."))
    found = Evidence(
        '"Green tea is steamed." [1]\n"Black tea is oxidised." [2]\n(the list continues in [2])',
        None,
        read,
        False,
        (Sentence("Green tea is steamed.", 0, 0), Sentence("Black tea is oxidised.", 1, 0)),
        {2: 4},
    )
    support = Sentence("Tea grows on hills.", 0, 0)
    lines, sources, pages = quoted_evidence(found, model_sources, support)
    assert [s.path for s in sources] == ["a.md", "b.md", "c.md"] and sources[2].number == 3
    assert lines == [
        '"Green tea is steamed." [2]',
        '"Black tea is oxidised." [3]',
        "(the list continues in [3])",
        '"Tea grows on hills." [1]',  # the sentence holding the model's words, not among the quotes
    ]
    assert pages == {3: 4}


def test_renumbering_leaves_the_quoted_words_alone():
    assert renumbered('"See [1] in the manual." [1] [2]', {1: 4, 2: 1}) == '"See [1] in the manual." [4] [1]'
