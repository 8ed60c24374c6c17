"""Keyword arguments of `Index` calls: unknown names and wrong types are one-line `UsageError`s."""

from __future__ import annotations

import re

import pytest

import ragcli
from ragcli.errors import UsageError
from ragcli.types import IngestOptions
from test_index import docs, loads  # noqa: F401 (fixtures)


@pytest.fixture
def index(docs, loads):  # noqa: F811
    with ragcli.open_index("idx", mode="bm25") as index:
        index.ingest([docs], IngestOptions(split_by="word", chunk_size=60, chunk_overlap=0))
        yield index


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"topk": 3}, "unknown argument 'topk' (did you mean top_k?)"),
        ({"top_k": "3"}, "top_k must be a whole number, not '3'"),
        ({"top_k": 2.5}, "top_k must be a whole number"),
        ({"top_k": True}, "top_k must be a whole number"),
        ({"min_score": "high"}, "min_score must be a number"),
        ({"min_score": float("nan")}, "min_score must be a finite number, not nan"),  # no hits
        ({"min_score": float("-inf")}, "min_score must be a finite number, not -inf"),
        ({"weights": (float("nan"), 1.0)}, "weights must be a finite number, not nan"),
        ({"candidates": "5"}, "candidates must be a whole number"),
        ({"weights": "ab"}, "weights must be a list"),
        ({"weights": (1,)}, "weights must hold 2 values"),
        ({"filters": 5}, "filters must be key=value strings or a mapping"),
        ({"options": {"top_k": 3}}, "options must be QueryOptions, not dict"),
        # as `rag mcp` and `rag serve` pass them: no silent default group, no empty filter
        ({"group": ""}, "group '': give a group's name"),  # not the command line's "--group"
        ({"filters": {"file_type": ""}}, 'filters.file_type: an empty value; write a value, e.g. "pdf"'),
        ({"filters": ["file_type="]}, 'filters: "file_type=": no value after "="'),
    ],
)
def test_bad_search_arguments_are_usage_errors(index, given, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        index.search("lighthouse", **given)
    with pytest.raises(UsageError):
        index.search_many(["lighthouse"], **given)


def test_one_string_is_one_word_one_filter_one_value(index):
    """A string where a list goes is one item, not a list of its letters."""
    lens = index.search("lighthouse lens", require=["lens"])
    assert lens and index.search("lighthouse lens", require="lens") == lens
    pdf = index.search("lighthouse", filters=["file_type=pdf"])
    assert pdf and index.search("lighthouse", filters="file_type=pdf") == pdf
    assert index.search("lighthouse", filters={"file_type": "pdf"}) == pdf
    ready = index.query_options(top_k=1)
    assert index.search("lighthouse", ready, filters={"file_type": ["pdf"]}) == pdf[:1]


def test_queries_and_questions_must_be_text(index):
    for call in (lambda: index.search(None), lambda: index.ask(b"when?"), lambda: index.stream(3)):
        with pytest.raises(UsageError, match="must be a string"):
            call()
    assert index.search_many([]) == []
    with pytest.raises(UsageError, match="not one string"):
        index.search_many("lighthouse")
    with pytest.raises(UsageError, match=r"queries\[1\] must be a string, not NoneType"):
        index.search_many(["lighthouse", None])


def test_bad_ask_arguments_are_usage_errors(index):
    near = re.escape("ask: unknown argument 'max_token' (did you mean max_tokens?)")
    with pytest.raises(UsageError, match=near):
        index.ask("When was the lighthouse lit?", max_token=10)
    with pytest.raises(UsageError, match="max_tokens must be a whole number"):
        index.stream("When was the lighthouse lit?", max_tokens="10")
    with pytest.raises(UsageError, match="options must be AskOptions"):
        index.ask("When was the lighthouse lit?", index.query_options())


def test_ready_ask_options_take_retrieval_overrides(index):
    options = index.ask_options(mode="bm25", use_cache=False)
    assert index.ask_options(query=options.query, top_k=2).query.top_k == 2
    answer = index.ask("When was the lighthouse first lit?", options, top_k=1, filters=["file_type=pdf"])
    assert len(answer.retrieved) <= 1


def test_get_needs_a_path_or_a_whole_chunk_id(index):
    with pytest.raises(UsageError, match="give a PATH"):
        index.get()
    with pytest.raises(UsageError, match="chunk must be a whole number"):
        index.get(chunk="1")


def test_streamed_pieces_join_to_the_answer_text_even_when_it_abstains(index):
    for question in ("When was the lighthouse first lit?", "What is the capital of Mars?"):
        pieces = list(index.stream(question, use_cache=False))
        answer = pieces[-1]
        assert "".join(pieces[:-1]) == answer.text == index.ask(question, use_cache=False).text


def test_not_found_is_importable_from_ragcli_errors_and_raised_by_get(index):
    """The guide names every error in `ragcli.errors`; `NotFound` lived elsewhere only."""
    from ragcli.errors import NotFound, RagError
    from ragcli.retrieval.documents import NotFound as OldHome

    with pytest.raises(NotFound, match="not in the index"):
        index.get("docs/no-such-file.txt")
    assert OldHome is NotFound and issubclass(NotFound, RagError)
