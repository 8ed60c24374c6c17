"""Answer-support annotation (RAGTools' annotate_support) with word overlap and embeddings."""

from __future__ import annotations

from fakes import HashEmbedder
from ragcli.answer.context import Source
from ragcli.answer.support import annotate_support, label_for, split_sentences

SOURCES = [
    Source(1, "bread.md", None, 1.0, "Sourdough bread needs flour, water, salt and a starter.", (1,)),
    Source(2, "tea.txt", 2, 0.5, "Green tea is steamed or pan fired to stop oxidation.", (2,)),
]


def test_sentences_split_at_ends_and_keep_citations():
    text = "Bread needs flour [1]. Tea is 3.14 times greener![2]\nMore here? 中文句子。第二句"
    assert split_sentences(text) == [
        "Bread needs flour [1].",
        "Tea is 3.14 times greener![2]",
        "More here?",
        "中文句子。",
        "第二句",
    ]


def test_answer_and_sources_are_cut_by_one_splitter():
    text = "The U.S. Army left. [1] It came back, e.g. twice [2]. Fin. Être ou ne pas être."
    assert split_sentences(text) == [
        "The U.S. Army left. [1]",
        "It came back, e.g. twice [2].",
        "Fin.",
        "Être ou ne pas être.",
    ]


def test_labels_follow_documented_thresholds():
    assert [label_for(s) for s in (1.0, 0.6, 0.59, 0.3, 0.29, 0.0)] == [
        "supported",
        "supported",
        "partial",
        "partial",
        "unsupported",
        "unsupported",
    ]


def test_each_sentence_gets_its_best_source_and_label():
    answer = (
        "Sourdough bread needs flour and a starter [1]. Green tea is steamed [2]. "
        "Bread needs a hot oven and butter. Jupiter has many moons."
    )
    support = annotate_support(answer, SOURCES)
    assert [(s.label, s.source) for s in support] == [
        ("supported", 1),
        ("supported", 2),
        ("partial", 1),
        ("unsupported", None),
    ]
    assert support[0].score == 1.0 and support[3].score == 0.0
    assert support[2].sentence == "Bread needs a hot oven and butter."


def test_accents_and_stems_match():
    sources = [Source(1, "cafe.txt", None, 1.0, "Les cafés européens servent du café.", (1,))]
    (only,) = annotate_support("Cafes serve coffee.", sources)
    assert only.source == 1 and only.score > 0


def test_embedder_blends_in_similarity():
    plain = annotate_support("Green tea is steamed [2].", SOURCES)[0]
    blended = annotate_support("Green tea is steamed [2].", SOURCES, embedder=HashEmbedder())[0]
    assert plain.score == 1.0 and 0.3 < blended.score < 1.0 and blended.source == 2


def test_empty_answer_and_no_sources():
    assert annotate_support("", SOURCES) == ()
    assert annotate_support("Anything at all.", [])[0].label == "unsupported"


def test_a_wrong_number_or_name_is_not_supported_and_no_content_gets_no_label():
    from ragcli.answer.context import Source as Passage

    text = "The Eddystone Lighthouse was first lit in 1698 by Henry Winstanley."
    source = Passage(1, "a.pdf", None, 1.0, text, (1,))
    wrong_year, wrong_name, right, bare = annotate_support(
        "The Eddystone Lighthouse was first lit in 1823 [1]. It was first lit by Henry Ford [1]. "
        "The Eddystone Lighthouse was first lit in 1698 [1].\n6",
        [source],
    ) + (None,)
    assert wrong_year.label == "unsupported" and wrong_name.label != "supported"
    assert right.label == "supported" and bare is None  # "6" alone: no label at all
