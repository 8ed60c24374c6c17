"""`rag ask` over pages written as Sphinx writes them (Python's documentation, Read the Docs).

Every heading and API entry ends in a permalink sign ("¶") linking to itself; a page's file name
is often a common word ("programming.html") while its title has several ("Functional Programming
HOWTO"). Neither may leak into or misdirect an answer. Real CLI entry point.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import rag

import ragcli


def _sphinx_page(title: str, sections: dict[str, str]) -> str:
    """A page as Sphinx renders it: each heading followed by its permalink anchor."""
    body = "".join(
        f'<section id="{name.lower()}"><h2>{name}<a class="headerlink" href="#{name.lower()}" '
        f'title="Permalink to this heading">¶</a></h2><p>{text}</p></section>'
        for name, text in sections.items()
    )
    return (
        f"<html><head><title>{title} — Python documentation</title></head><body>"
        f'<div class="body" role="main"><h1>{title}<a class="headerlink" href="#top">¶</a></h1>'
        f"{body}</div></body></html>"
    )


PAGES = {
    "howto/functional.html": _sphinx_page(
        "Functional Programming HOWTO",
        {
            "Introduction": "This document is a tour of the features of Python that are suitable for "
            "implementing programs in a functional style.",
            "Iterators": "An iterator is an object representing a stream of data; it returns the data "
            "one element at a time.",
            "Generators": "Generators are a special class of functions that simplify the task of "
            "writing iterators.",
        },
    ),
    "faq/programming.html": _sphinx_page(
        "Programming FAQ",
        {
            "Debuggers": "Several debuggers for Python are described below, and the built-in "
            "function breakpoint() allows you to drop into any of them.",
            "Globals": "In Python, variables that are only referenced inside a function are "
            "implicitly global.",
        },
    ),
}


@pytest.fixture
def sphinx_index(tmp_path, isolated_home):
    docs = tmp_path / "docs"
    for name, page in PAGES.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(page, encoding="utf-8")
    index = ragcli.open_index(isolated_home)
    index.ingest([docs])
    return index


def test_a_page_named_by_its_title_is_summarised_not_the_file_sharing_its_last_word(sphinx_index):
    """ "the functional programming howto" names the page titled so, not programming.html."""
    question = "what is the functional programming howto about?"
    done = rag("ask", question, "--answer-style", "evidence", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert {Path(c["path"]).name for c in answer["citations"]} == {"functional.html"}, answer["answer"]
    assert "Generators" in answer["answer"]


def test_permalink_signs_are_not_quoted_with_headings(sphinx_index):
    done = rag("ask", "summarize the Programming FAQ", "--answer-style", "evidence")
    assert done.returncode == 0, done.stderr
    assert "Programming FAQ" in done.stdout and "Debuggers" in done.stdout, done.stdout
    assert "¶" not in done.stdout
