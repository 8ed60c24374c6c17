"""The JSON front ends (MCP tools, `rag serve`) build their options through one function."""

from __future__ import annotations

import pytest

import ragcli
from ragcli.call_options import ask_options, filter_pairs, query_options
from ragcli.errors import UsageError


@pytest.mark.parametrize(
    "filters, pairs",
    [
        (None, None),
        (
            {"file_type": ["pdf", "md"], "modified": ">=2024-01-01"},
            [("file_type", "pdf"), ("file_type", "md"), ("modified", ">=2024-01-01")],
        ),
        (["file_type=pdf"], ["file_type=pdf"]),
        ({}, []),
    ],
)
def test_filters_become_pairs_as_written(filters, pairs):
    assert filter_pairs(filters) == pairs


def test_a_key_with_no_values_is_refused():
    with pytest.raises(
        UsageError, match=r"^filters.file_type: give at least one value, or leave file_type out$"
    ):
        filter_pairs({"file_type": [], "modified": ">=2024-01-01"})


def test_a_calls_parameters_resolve_as_the_cli_does(tmp_path):
    index = ragcli.open_index(tmp_path / "idx", environ={"RAG_MODE": "bm25"})
    search = query_options(index, {"mode": None, "top_k": 3, "filters": {"file_type": ["pdf", "md"]}})
    assert (search.mode, search.top_k, search.filters) == ("bm25", 3, {"file_type": ("pdf", "md")})
    answer = ask_options(index, {"mode": "dense", "filters": None, "max_tokens": 64})
    assert (answer.query.mode, answer.query.filters, answer.max_tokens) == ("dense", {}, 64)
