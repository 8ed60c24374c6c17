"""`rag serve` as clients see it: the real server in a subprocess on a loopback port, driven by
httpx and by the MCP SDK's streamable-HTTP client (real default embedding model, an index of
the fixture documents built by the real `rag ingest`)."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from urllib.parse import quote

import anyio
import httpx2 as httpx  # the HTTP client the MCP SDK brings
import pytest
from typer.testing import CliRunner

from runner import rag
from serving import build_index, clean_env, cli_json, post, rag_child, running_server, served_fixtures

TOKEN = "s3cret-token"


setup, server = served_fixtures()


# -- the JSON API ---------------------------------------------------------------------------
def test_query_answers_the_cli_json_document(server, setup):
    served = post(server, "/query", {"query": "lighthouse Alexandria", "top_k": 3}).json()
    cli = cli_json(setup, "query", "lighthouse Alexandria", "--top-k", "3")
    assert served == cli
    assert served["kind"] == "query" and served["mode"] == "bm25"  # RAG_MODE, as for the CLI
    assert served["hits"][0]["path"].endswith("lighthouses.pdf")


def test_request_settings_win_over_the_environment(server):
    served = post(server, "/query", {"query": "sourdough starter", "mode": "hybrid", "top_k": 1}).json()
    assert served["mode"] == "hybrid" and len(served["hits"]) == 1
    assert served["hits"][0]["path"].endswith("bread_baking.md")
    assert set(served["hits"][0]["sources"]) == {"bm25", "dense"}
    filtered = post(server, "/query", {"query": "lighthouse", "filters": {"file_type": "md"}}).json()
    assert {Path(hit["path"]).suffix for hit in filtered["hits"]} <= {".md"}


def test_documents_status_and_a_page(server, setup):
    assert httpx.get(f"{server}/documents").json() == cli_json(setup, "ls")
    assert httpx.get(f"{server}/status").json()["documents"] == cli_json(setup, "status")["documents"]
    pdf = str(setup["docs"] / "lighthouses.pdf")
    page = httpx.get(f"{server}/documents/{quote(pdf, safe='')}", params={"page": 2}).json()
    assert page == cli_json(setup, "get", f"{pdf}:2")
    assert page["kind"] == "page" and page["page"] == 2
    chunk_id = page["chunk_ids"][0]
    assert httpx.get(f"{server}/chunks/{chunk_id}").json()["chunk_id"] == chunk_id
    missing = httpx.get(f"{server}/documents/{quote('/etc/passwd', safe='')}")
    assert missing.status_code == 404 and "not in the index" in missing.json()["error"]


def test_health_and_openapi(server):
    health = httpx.get(f"{server}/health").json()
    assert health["ok"] is True and health["answers"]["capacity"] == 0
    schema = httpx.get(f"{server}/openapi.json").json()
    assert {"/query", "/ask", "/documents", "/status", "/health"} <= set(schema["paths"])
    assert "/ingest" not in schema["paths"]
    assert schema["components"]["schemas"]["QueryBody"]["properties"]["top_k"]["anyOf"][0]["maximum"] == 100


def test_ask_answers_the_cli_json_document(server, setup):
    served = post(server, "/ask", {"question": "When was the Pharos of Alexandria built?"}).json()
    cli = cli_json(setup, "ask", "When was the Pharos of Alexandria built?")
    assert set(served) == set(cli) and served["kind"] == "answer"
    assert served["answer"] == cli["answer"] and served["citations"] == cli["citations"]
    assert "280 BC" in served["answer"]
    brief = post(
        server, "/ask", {"question": "When was the Pharos of Alexandria built?", "evidence_chars": 60}
    )
    assert "280 BC" in brief.json()["answer"] and len(brief.json()["answer"]) < len(served["answer"])


def test_ask_streams_tokens_then_the_answer(server):
    body = {
        "question": "How long should bread dough rise?",
        "answer_style": "generative",
        "max_tokens": 24,
        "mode": "hybrid",
    }
    events = list(sse_events(server, {**body, "stream": True}))
    names = [name for name, _ in events]
    assert names[-2:] == ["answer", "done"] and names.count("token") >= 2
    answer = events[-2][1]
    assert answer["kind"] == "answer" and answer["citations"] and answer["support"]
    assert "".join(data["text"] for name, data in events if name == "token") == answer["answer"]


def sse_events(base: str, body: dict):
    with httpx.stream("POST", f"{base}/ask", json=body, timeout=300) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield from parse_events(response.iter_lines())


def parse_events(lines):
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])


# -- files ----------------------------------------------------------------------------------
def test_an_indexed_pdf_is_served(server, setup):
    pdf = str(setup["docs"] / "lighthouses.pdf")
    response = httpx.get(f"{server}/files/{quote(pdf, safe='')}")
    assert response.status_code == 200 and response.headers["content-type"] == "application/pdf"
    assert response.content == Path(pdf).read_bytes()


def test_nothing_but_indexed_files_inside_the_roots_is_served(server, setup):
    docs, outside = setup["docs"], setup["outside"]
    link = str(docs / "link.txt")
    assert link in [doc["path"] for doc in httpx.get(f"{server}/documents").json()["documents"]]
    attempts = [
        quote(link, safe=""),  # indexed, but a symlink out of the root
        quote(str(outside / "secret.txt"), safe=""),
        quote("/etc/passwd", safe=""),
        quote(f"{docs}/../outside/secret.txt", safe=""),
        quote(f"{docs}/../docs/lighthouses.pdf", safe=""),  # a real document, but not its indexed name
        quote(quote(str(docs / "lighthouses.pdf"), safe=""), safe=""),  # encoded twice
        f"{docs}/../outside/secret.txt".lstrip("/"),
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "%2e%2e/%2e%2e/etc/passwd",
        quote(str(docs / "lighthouses.pdf") + "\x00", safe=""),
    ]
    for attempt in attempts:
        response = httpx.get(f"{server}/files/{attempt}")
        assert response.status_code == 404, attempt
        assert "hunter2" not in response.text and "root:" not in response.text


# -- answers in their worker: queue, disconnects --------------------------------------------
def test_a_slow_answer_blocks_no_search_and_a_gone_client_stops_it(server):
    body = {
        "question": "How is sourdough bread made? Explain every step in great detail.",
        "answer_style": "generative",
        "mode": "hybrid",
        "max_tokens": 1200,  # the packaged model writes all 1200 for this question
        "stream": True,
    }
    with httpx.stream("POST", f"{server}/ask", json=body, timeout=300) as response:
        events = parse_events(response.iter_lines())
        assert next(events)[0] == "token"  # generating now
        assert httpx.get(f"{server}/health").json()["answers"]["running"] == 1
        query = post(server, "/query", {"query": "lighthouse", "top_k": 1})
        assert query.status_code == 200 and query.json()["hits"]
        refused = post(server, "/ask", {"question": "When was the Pharos built?"})
        assert refused.status_code == 503 and int(refused.headers["retry-after"]) > 0
        assert "queue is full" in refused.json()["error"]
    # The client went away mid-stream: the generation stops, the worker frees up.
    state = wait_for(lambda: httpx.get(f"{server}/health").json()["answers"], lambda s: s["running"] == 0)
    assert state["cancelled"] == 1
    assert post(server, "/ask", {"question": "When was the Pharos built?"}).status_code == 200


def wait_for(read, done, limit: float = 120):
    """`read()` until `done(value)`: the server finishes in its own time (not a timed assertion)."""
    deadline = time.monotonic() + limit
    while True:
        value = read()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


# -- MCP over streamable HTTP ---------------------------------------------------------------
def test_mcp_client_lists_and_calls_the_tools(server, setup):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        async with streamable_http_client(f"{server}/mcp") as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = {tool.name for tool in (await session.list_tools()).tools}
                found = await session.call_tool("search", {"query": "lighthouse Alexandria", "top_k": 2})
                stored = await session.call_tool(
                    "get", {"chunk_id": found.structured_content["hits"][0]["chunk_id"]}
                )
                status = await session.call_tool("status", {})
                return tools, found, stored, status

    tools, found, stored, status = anyio.run(main)
    assert tools == {"search", "ask", "get", "status"}
    assert found.structured_content["hits"][0]["path"].endswith("lighthouses.pdf")
    assert stored.structured_content["kind"] == "chunk"
    assert status.structured_content["documents"] == 4


def test_an_empty_list_of_filter_values_is_refused_over_http_and_mcp(server):
    """`{"file_type": []}` filtered nothing out: every document came back, as if no filter."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    error = "filters.file_type: give at least one value, or leave file_type out"
    for path, text in (("/query", {"query": "lighthouse"}), ("/ask", {"question": "Who built the Pharos?"})):
        refused = post(server, path, {**text, "filters": {"file_type": []}})
        assert refused.status_code == 422 and refused.json() == {"error": error}, path

    async def main():
        async with streamable_http_client(f"{server}/mcp") as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return await session.call_tool(
                    "search", {"query": "lighthouse", "filters": {"file_type": []}}
                )

    found = anyio.run(main)
    assert found.is_error and found.content[0].text == f"rag: error: search: bad arguments: {error}"


# -- another process changes the index ------------------------------------------------------
def test_an_ingest_by_another_process_is_seen_on_the_next_request(server, setup):
    (setup["docs"] / "kites.md").write_text(
        "# Kites\n\nA tetrahedral kite was flown by Alexander Graham Bell.\n"
    )
    rag_child(setup["env"], "ingest", str(setup["docs"]), "--index", str(setup["index"]))
    hits = post(server, "/query", {"query": "tetrahedral kite", "top_k": 1}).json()["hits"]
    assert hits[0]["path"].endswith("kites.md")


# -- token, ingest, exposure ----------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded(tmp_path_factory, model_cache_dir):
    base = tmp_path_factory.mktemp("guarded")
    env = clean_env(base / "home", model_cache_dir, RAG_SERVE_TOKEN=TOKEN)
    docs, index = build_index(base, env)
    args = ("--index", str(index), "--allow-ingest", "--cors", "https://app.example")
    with running_server(env, *args, token=TOKEN) as url:
        yield {"url": url, "docs": docs, "base": base}


def test_every_request_needs_the_token(guarded):
    url, bearer = guarded["url"], {"authorization": f"Bearer {TOKEN}"}
    for method, path in [
        ("GET", "/health"),
        ("GET", "/"),
        ("GET", "/documents"),
        ("POST", "/query"),
        ("POST", "/mcp"),
    ]:
        assert httpx.request(method, f"{url}{path}", json={"query": "x"}).status_code == 401, path
        wrong = {"authorization": "Bearer not-it"}
        assert httpx.request(method, f"{url}{path}", json={"query": "x"}, headers=wrong).status_code == 401
    assert httpx.get(f"{url}/documents", headers=bearer).status_code == 200
    page = httpx.get(f"{url}/", params={"token": TOKEN})  # the page keeps it in a cookie
    assert page.status_code == 200 and "rag_token" in page.headers["set-cookie"]
    assert httpx.get(f"{url}/status", cookies={"rag_token": TOKEN}).status_code == 200


def test_the_token_may_come_from_the_config_file(setup, tmp_path):
    """serve_token is a setting like any other (RAG_SERVE_TOKEN, or the config file); the file
    holding it is readable by its owner only, and `rag config` never prints it."""
    env = {**setup["env"], "XDG_CONFIG_HOME": str(tmp_path / "config")}
    written = rag_child(env, "config", "set", "serve_token", TOKEN)
    assert TOKEN not in written.stderr and "serve_token = (hidden)" in written.stderr
    config = Path(rag_child(env, "config", "path").stdout.strip())
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    shown = json.loads(rag_child(env, "config", "show", "--json").stdout)["settings"]
    row = next(row for row in shown if row["key"] == "serve_token")
    assert row["value"] == "(hidden)" and row["source"].startswith("config:") and TOKEN not in str(shown)
    with running_server(env, "--index", str(setup["index"]), "--queue", "0", token=TOKEN) as base:
        assert httpx.get(f"{base}/documents").status_code == 401
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert httpx.get(f"{base}/documents", headers=bearer).status_code == 200


def test_cors_only_for_the_named_origin(guarded, server):
    bearer = {"authorization": f"Bearer {TOKEN}"}
    allowed = httpx.get(f"{guarded['url']}/health", headers={**bearer, "origin": "https://app.example"})
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    other = httpx.get(f"{guarded['url']}/health", headers={**bearer, "origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    plain = httpx.get(f"{server}/health", headers={"origin": "https://app.example"})
    assert "access-control-allow-origin" not in plain.headers


def test_a_browser_preflight_passes_without_the_token(guarded):
    """A browser asks before a cross-origin POST, without the Authorization header it is
    about to send: the preflight must be answered, or --cors with --token never works."""
    asking = {
        "origin": "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
    }
    preflight = httpx.options(f"{guarded['url']}/query", headers=asking)
    assert preflight.status_code == 200, preflight.text
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    foreign = httpx.options(f"{guarded['url']}/query", headers={**asking, "origin": "https://evil.example"})
    assert foreign.status_code == 400 and "access-control-allow-origin" not in foreign.headers
    unauthorised = post(guarded["url"], "/query", {"query": "x"}, headers={"origin": "https://app.example"})
    assert unauthorised.status_code == 401  # the page can read why
    assert unauthorised.headers["access-control-allow-origin"] == "https://app.example"


def test_ingest_reads_only_under_the_recorded_roots(guarded, server):
    url, bearer = guarded["url"], {"authorization": f"Bearer {TOKEN}"}
    (guarded["docs"] / "kites.md").write_text("# Kites\n\nA box kite was flown by Lawrence Hargrave.\n")
    outside = guarded["base"] / "elsewhere"
    outside.mkdir()
    for paths in ([str(outside)], [f"{guarded['docs']}/../elsewhere"], ["relative/docs"], ["/"]):
        refused = post(url, "/ingest", {"paths": paths}, headers=bearer)
        assert refused.status_code == 403 and "roots" in refused.json()["error"], paths
    report = post(url, "/ingest", {"paths": [str(guarded["docs"])]}, headers=bearer).json()
    assert report["kind"] == "ingest" and report["added"] == 1
    hits = post(url, "/query", {"query": "box kite Hargrave", "top_k": 1}, headers=bearer).json()["hits"]
    assert hits[0]["path"].endswith("kites.md")
    assert post(server, "/ingest", {}).status_code in (404, 405)  # off without --allow-ingest


def test_ingest_refuses_an_empty_list_of_paths(guarded):
    """An empty selection is a client's mistake: it re-read every root, as no paths at all does."""
    url, bearer = guarded["url"], {"authorization": f"Bearer {TOKEN}"}
    refused = post(url, "/ingest", {"paths": []}, headers=bearer)
    assert refused.status_code == 422
    assert refused.json() == {
        "error": "paths: give at least one path, or leave paths out to re-read every root"
    }
    for body in ({}, {"paths": None}):
        report = post(url, "/ingest", body, headers=bearer)
        assert report.status_code == 200 and report.json()["kind"] == "ingest", body


def test_listening_beyond_loopback_needs_a_token(monkeypatch):
    from ragcli.cli import app

    monkeypatch.delenv("RAG_SERVE_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "--host 0.0.0.0" in result.output and "--token" in result.output


def test_help_shows_an_example():
    from ragcli.cli import app

    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["serve", "--help"])
    assert (
        result.exit_code == 0 and "rag serve --index" in result.output and "--allow-ingest" in result.output
    )


def test_the_page_and_its_files_ship_with_the_package(server):
    page = httpx.get(f"{server}/")
    assert page.status_code == 200 and 'src="/static/app.js"' in page.text
    for name in ("app.js", "style.css"):
        assert httpx.get(f"{server}/static/{name}").status_code == 200
    assert httpx.get(f"{server}/static/..%2F..%2Fapp.py").status_code == 404
    for name in ("", "static/app.js", "static/style.css"):  # nothing fetched from elsewhere
        text = httpx.get(f"{server}/{name}").text
        assert "http://" not in text and "https://" not in text
    assert os.path.isfile(Path(__file__).parent.parent / "ragcli" / "serve" / "static" / "index.html")


# -- docs/json.md's HTTP shapes, against real answers ----------------------------------------
def http_shapes() -> dict[str, dict[str, list[str]]]:
    """The `### \\`GET ...\\``, `error` and `event: ...` sections of docs/json.md."""
    import re

    from test_json_shapes import DOC

    text = DOC.read_text().split("## Over HTTP")[1]
    shapes: dict[str, dict[str, list[str]]] = {}
    heading = None
    for line in text.splitlines():
        if match := re.match(r"### `([^`]+)`", line):
            heading = match.group(1)
            shapes[heading] = {}
        elif (bullet := re.match(r"- `([^`]+)`: (.*)", line)) and heading:
            shapes[heading][bullet.group(1)] = re.findall(r"`([^`]+)`", bullet.group(2))
    return shapes


def test_the_documented_http_shapes_are_the_real_ones(server):
    from test_json_shapes import values_at

    answered = dict(
        sse_events(server, {"question": "When was the Pharos built?", "stream": True, "mode": "hybrid"})
    )
    too_long = {"question": "When was the Pharos built?", "answer_style": "generative", "max_tokens": 4096}
    failed = dict(sse_events(server, {**too_long, "stream": True, "mode": "hybrid"}))
    real = {
        "GET /health": httpx.get(f"{server}/health").json(),
        "error": httpx.get(f"{server}/chunks/999999").json(),
        "event: token": answered["token"],
        "event: error": failed["error"],
    }
    shapes = http_shapes()
    assert set(shapes) == set(real)
    for name, paths in shapes.items():
        for path, keys in paths.items():
            for value in values_at(real[name], path):
                assert sorted(value) == sorted(keys), (name, path)


def test_the_rerank_model_setting_reaches_the_server(setup, tmp_path):
    """A cross-encoder could not be used over HTTP: the body has no rerank model and the only way
    to name one was the CLI's --rerank-model. The `rerank_model` setting is read as the CLI
    reads it (here a file, not a folder, so the error names it without loading torch)."""
    model = tmp_path / "reranker.bin"
    model.write_text("not a model")
    env = {**setup["env"], "RAG_RERANK_MODEL": str(model)}
    with running_server(env, "--index", str(setup["index"]), "--queue", "0") as base:
        refused = post(base, "/query", {"query": "lighthouse", "rerank": "cross-encoder"})
    cli = rag("query", "lighthouse", "--rerank", "cross-encoder", "--index", str(setup["index"]), env=env)
    assert refused.status_code == 500 and "is a file, not a CrossEncoder folder" in refused.json()["error"]
    assert str(model) in refused.json()["error"] and f"{model} is a file" in cli.stderr
