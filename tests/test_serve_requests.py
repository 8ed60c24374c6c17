"""`rag serve` refusing bad requests as clients see it: one JSON error line with the right status,
from the real server in a subprocess (an index of the fixture documents built by the real
`rag ingest`)."""

from __future__ import annotations

import json

import httpx2 as httpx  # the HTTP client the MCP SDK brings
import pytest

from runner import rag
from serving import post, served_fixtures

setup, server = served_fixtures()


# -- bad requests ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "content_type", "status", "words"),
    [
        (b"{not json", "application/json", 400, "malformed JSON"),
        (b"[1, 2]", "application/json", 400, "JSON object"),
        (b'{"query": "x", "top_k": 1000}', "application/json", 422, "top_k"),
        (b'{"query": "x", "topk": 3}', "application/json", 422, "topk"),
        (b'{"query": ""}', "application/json", 422, "query"),
        (b'{"query": " \\n\\t "}', "application/json", 422, "query: give some words to search for"),
        (b'{"query": "x", "top_k": true}', "application/json", 422, "top_k"),
        (b'{"query": "x", "top_k": "3"}', "application/json", 422, "top_k"),
        (b'{"query": "x", "min_score": NaN}', "application/json", 422, "min_score"),
        (b'{"query": "x", "filters": ["nokey"]}', "application/json", 422, "key=value"),
        (b'{"query": "x", "group": "nosuchgroup"}', "application/json", 404, "nosuchgroup"),
        (b'{"query": "x"}', "text/plain", 415, "application/json"),
        (b"\xff\xfe", "application/json", 400, "malformed JSON"),
    ],
)
def test_a_bad_body_gets_one_json_error_line(server, content, content_type, status, words):
    response = httpx.post(f"{server}/query", content=content, headers={"content-type": content_type})
    assert response.status_code == status
    assert words in response.json()["error"] and "Traceback" not in response.text


# Filter errors name the filter as the JSON caller wrote it, never as a `--filter` flag.
JSON_FILTER_ERRORS = [
    (
        {"modified": "yesterday"},
        'filters.modified: "yesterday" is not a date; write an ISO date such as ">=2024-01-01" '
        "(or 2024, 2024-05, 2024-05-01T10:00)",
    ),
    ({"file_type": ""}, 'filters.file_type: an empty value; write a value, e.g. "pdf"'),
    ({"modified": ">="}, 'filters.modified: no value after ">="; write a value, e.g. ">=2024-01-01"'),
    ({"file_type": "=pdf"}, 'filters.file_type: "=pdf" has one "=" too many; write "pdf"'),
    ({"": "pdf"}, 'filters: "" is not a key; write a metadata key, e.g. {"file_type": "pdf"}'),
    ({"file_type": True}, 'filters.file_type: true is not a filter value; write a string, e.g. "pdf"'),
    ({"file_type": ["md", 3]}, 'filters.file_type: 3 is not a filter value; write a string, e.g. "pdf"'),
    ({"colour": "red"}, "filters.colour: unknown filter key; known keys are "),
    (["nokey"], 'filters: "nokey": write key=value, e.g. "file_type=pdf" or "modified>=2024-01-01"'),
    (["modified=yesterday"], 'filters: "modified=yesterday": "yesterday" is not a date; write an ISO date'),
    ([7], 'filters[0]: 7 is not a filter value; write a string, e.g. "file_type=pdf"'),
]


@pytest.mark.parametrize(("filters", "said"), JSON_FILTER_ERRORS)
def test_a_filter_error_names_the_filter_as_the_json_body_wrote_it(server, filters, said):
    """`{"filters": {"modified": "yesterday"}}` was answered "--filter 'modified=yesterday': ...",
    a flag the client never wrote; a value of another JSON type got the schema's union noise."""
    for path, text in (("/query", {"query": "lighthouse"}), ("/ask", {"question": "Who built the Pharos?"})):
        refused = post(server, path, {**text, "filters": filters})
        error = refused.json()["error"]
        assert refused.status_code == 422 and error.startswith(said), (path, error)
        assert "--filter" not in error and "\n" not in error


def test_a_blank_question_or_a_wrong_type_is_refused_as_by_the_cli(server, setup):
    blank = post(server, "/ask", {"question": "   "})
    assert blank.status_code == 422 and blank.json() == {"error": "question: ask something"}
    assert rag_child_fails(setup, "ask", "   ") == 2 and rag_child_fails(setup, "query", "   ") == 2
    stream = post(server, "/ask", {"question": "x", "stream": "yes"})
    assert stream.status_code == 422 and "stream" in stream.json()["error"]


def test_null_is_not_given_for_every_optional_field(server):
    """The guide's promise: a field sent as null gets the server's setting ("stream": null was a 422)."""
    from ragcli.serve.bodies import AskBody, QueryBody

    for path, model, text in (
        ("/query", QueryBody, {"query": "lighthouse Alexandria"}),
        ("/ask", AskBody, {"question": "When was the Pharos of Alexandria built?"}),
    ):
        nulls = {name: None for name, field in model.model_fields.items() if not field.is_required()}
        assert "stream" in nulls or path == "/query"
        served = post(server, path, {**text, **nulls})
        assert served.status_code == 200, served.text
        plain = post(server, path, text).json()
        assert served.json()["kind"] == plain["kind"] and served.json().get("hits") == plain.get("hits")
        assert served.json().get("answer") == plain.get("answer")


def test_keyword_rerank_without_words_names_the_body_fields(server, setup):
    """Refused as any other value of the body is (422), whatever the query's words."""
    for query in ("lighthouse", "!!!", "the of and"):
        refused = post(server, "/query", {"query": query, "rerank": "keyword"})
        assert refused.status_code == 422, query
        assert "give require and/or exclude words" in refused.json()["error"]
    unknown_key = post(server, "/query", {"query": "lighthouse", "filters": {"colour": "red"}})
    assert (
        unknown_key.status_code == 422
        and "filters.colour: unknown filter key;" in unknown_key.json()["error"]
    )
    cli = rag("query", "lighthouse", "--rerank", "keyword", "--index", str(setup["index"]), env=setup["env"])
    assert cli.returncode == 2 and "--require WORD / --exclude WORD" in cli.stderr


def rag_child_fails(setup, *args: str) -> int:
    return rag(*args, "--index", str(setup["index"]), env=setup["env"]).returncode


def test_the_media_type_is_read_without_regard_to_case(server):
    response = httpx.post(
        f"{server}/query",
        content=b'{"query": "sourdough", "top_k": 1}',
        headers={"content-type": "Application/JSON; charset=UTF-8"},
    )
    assert response.status_code == 200 and response.json()["hits"][0]["path"].endswith("bread_baking.md")


def test_bodies_over_one_megabyte_are_refused(server):
    big = json.dumps({"query": "x" * (1024 * 1024)})
    response = httpx.post(f"{server}/query", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "bytes" in response.json()["error"]

    def chunks():  # no content-length: the cap counts what streams in
        for _ in range(20):
            yield b"x" * 100_000

    streamed = httpx.post(f"{server}/ask", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413


def test_a_foreign_host_header_is_refused_on_loopback(server):
    """A page whose DNS name was rebound to 127.0.0.1 does not get the index."""
    response = httpx.get(f"{server}/documents", headers={"host": "evil.example"})
    assert response.status_code == 400 and "documents" not in response.text
    assert response.json() == {"error": "Invalid host header"}


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "error"),
    [
        ("GET", "/nothing", {}, 404, "no such path: /nothing (the API is described at /openapi.json)"),
        ("GET", "/static/nothing.js", {}, 404, "no such path: /static/nothing.js"),
        ("GET", "/query", {}, 405, "GET /query is not allowed: use POST"),
        ("POST", "/documents", {}, 405, "POST /documents is not allowed: use GET, HEAD"),
        ("POST", "/mcp", {"content-type": "text/plain"}, 400, "Invalid Content-Type header"),
        ("GET", "/chunks/%D9%A3", {}, 400, "chunk id '\u0663': give a whole number"),
    ],
)
def test_every_error_of_the_framework_is_one_json_line(server, method, path, headers, status, error):
    response = httpx.request(method, f"{server}{path}", headers=headers, content=b"x")
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"].startswith(error)
    if status == 405:
        assert sorted(response.headers["allow"].split(", ")) == error.rsplit(": use ")[1].split(", ")
