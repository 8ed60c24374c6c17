"""Both sides of a comparison: the sides a question names, and the sentence describing each."""

from __future__ import annotations

import pytest

from ragcli.answer.comparison import comparison_sides, missing_sides, search_text, side_description
from ragcli.answer.evidence import select_evidence
from ragcli.answer.context import Source
from ragcli.answer.sentences import score_sentences, sentences_of


@pytest.mark.parametrize(
    ("question", "sides"),
    [
        ("tar vs zip vs rar, which one compresses best?", ["tar", "zip", "rar"]),
        # sides listed with "vs" before "what's the difference", and a question's clause after a dash
        (
            "dev-dependencies vs build-dependencies, what's the difference?",
            ["dev-dependencies", "build-dependencies"],
        ),
        ("git fetch vs git pull - which one should I use?", ["fetch", "pull"]),
        ("tar vs. zip \u2014 which is faster?", ["tar", "zip"]),
        ("What is the difference between a latte and a cappuccino?", ["latte", "cappuccino"]),
        ("what's the difference between git fetch and git pull?", ["fetch", "pull"]),
        ("reset --soft, --mixed and --hard: what's the difference?", ["--soft", "--mixed", "--hard"]),
        ("difference between HEAD~2 and HEAD^2", ["HEAD~2", "HEAD^2"]),
        ("Compare a latte and a cappuccino", ["latte", "cappuccino"]),
        ("can you compare tar with zip?", ["tar", "zip"]),
        ("How does a latte compare to a cappuccino?", ["latte", "cappuccino"]),
        ("tar compared with zip and rar", ["tar", "zip", "rar"]),
        ("How do the prices compare?", []),
        ("How do I bake bread?", []),
        ("Is a latte stronger?", []),
        # "VS" in capitals is a name, not the word between two sides
        ("how do I set up VS Code to work on a Rust project?", []),
    ],
)
def test_the_sides_a_question_compares(question, sides):
    assert comparison_sides(question) == sides


@pytest.mark.parametrize(
    ("question", "searched"),
    [
        # "vs" matched pages titled "A vs B" on other things ahead of the command's own page
        (
            "cargo check vs cargo build: why is check quicker?",
            "cargo check cargo build: why is check quicker?",
        ),
        ("tar versus zip", "tar zip"),
        (
            "what's the difference between git fetch and git pull?",
            "what's the difference between git fetch and git pull?",
        ),
        ("how do I set up VS Code?", "how do I set up VS Code?"),
    ],
)
def test_a_comparison_is_searched_without_the_vs_between_its_sides(question, searched):
    assert search_text(question) == searched


MANUAL = (
    "Coffee drinks\n\nBoth drinks start from one espresso shot and differ in their milk.\n\n"
    "Latte\n\nA latte is an espresso with a lot of steamed milk and a thin layer of foam.\n\n"
    "Cappuccino\n\nEqual parts of espresso, steamed milk and milk foam make a cappuccino."
)


def test_a_side_is_described_by_the_paragraph_under_its_label():
    documents = [sentences_of([MANUAL])]
    found = side_description(("cappuccino",), documents)
    assert found is not None and found.text.startswith("Equal parts of espresso")
    assert side_description(("mocha",), documents) is None


def test_a_side_is_found_by_its_whole_name_or_its_short_one():
    documents = [sentences_of(["Usage.\n\ngit-revert(1) is about making a new commit that reverts changes."])]
    found = side_description(("git revert", "revert"), documents)
    assert found is not None and found.text.startswith("git-revert(1) is about")


def test_the_evidence_describes_every_side_the_best_sentence_leaves_out():
    question = "What is the difference between a latte and a cappuccino?"
    sources = [Source(1, "coffee.md", None, 1.0, MANUAL, (1,))]
    ranked = score_sentences(question, sentences_of([MANUAL]))
    ranked.sort(key=lambda s: -s.score)
    chosen = select_evidence(question, sources, ranked, budget=400).chosen
    texts = [s.text for s in chosen]
    assert any(t.startswith("A latte is") for t in texts) and any(t.startswith("Equal parts") for t in texts)
    assert missing_sides(question, chosen) == []
