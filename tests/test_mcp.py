"""`rag mcp` through the official MCP SDK's own stdio client, against the installed `rag`
(real default models, an index of the fixture documents built by the installed `rag ingest`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from functools import partial
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from conftest import FIXTURES, shared_model_files

RAG = shutil.which("rag") or "rag"


@pytest.fixture(scope="module")
def env(tmp_path_factory, model_cache_dir) -> dict[str, str]:
    home = tmp_path_factory.mktemp("mcp-home")
    environ = {key: value for key, value in os.environ.items() if not key.startswith("RAG_")}
    environ.update(
        RAG_CACHE_DIR=str(shared_model_files(home / "cache", model_cache_dir)),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        HF_HUB_OFFLINE="1",
    )
    return environ


@pytest.fixture(scope="module")
def index(tmp_path_factory, corpus_index) -> Path:
    """This module's copy of the three-document index (the ask tool caches answers in it)."""
    return corpus_index("three-docs").copy(tmp_path_factory.mktemp("mcp-index") / "index")


def session_run(index: Path, env: dict[str, str], body, errlog=None):
    """Start `rag mcp --index INDEX` with the SDK's stdio client and run `body(session)`."""
    params = StdioServerParameters(command=RAG, args=["mcp", "--index", str(index)], env=env)

    async def main():
        async with stdio_client(params, errlog=errlog or open(os.devnull, "w")) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def test_lists_four_tools_with_described_schemas(index, env):
    async def body(session):
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in session_run(index, env, body)}
    assert set(tools) == {"search", "ask", "get", "status"}
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert set(search["properties"]) == {
        *("query", "mode", "top_k", "group", "filters"),
        *("min_score", "rerank", "fusion", "require", "exclude"),  # as POST /query and `rag query`
    }
    assert all(prop.get("description") for prop in search["properties"].values())
    assert tools["ask"].input_schema["required"] == ["question"]
    assert set(tools["get"].input_schema["properties"]) == {"path", "page", "chunk_id"}
    assert all(tool.description and tool.annotations.read_only_hint for tool in tools.values())


@pytest.mark.model
def test_calls_each_tool_with_progress(index, env):
    progress: list[tuple] = []

    async def record(done, total, message):
        progress.append((done, total, message))

    async def body(session):
        arguments = {"query": "Eddystone lighthouse storm", "top_k": 3, "filters": {"file_type": "pdf"}}
        search = await session.call_tool("search", arguments, progress_callback=record)
        searched = len(progress)
        hit = search.structured_content["hits"][0]
        chunk = await session.call_tool("get", {"chunk_id": hit["chunk_id"]})
        page = await session.call_tool("get", {"path": hit["path"], "page": 2})
        ask = await session.call_tool(
            "ask", {"question": "When was the Eddystone Lighthouse first lit?"}, progress_callback=record
        )
        status = await session.call_tool("status", {})
        arguments = {"question": "When was the Eddystone Lighthouse first lit?", "evidence_chars": 60}
        brief = await session.call_tool("ask", arguments)
        return search, searched, chunk, page, ask, status, brief

    search, searched, chunk, page, ask, status, brief = session_run(index, env, body)
    assert not any(result.is_error for result in (search, chunk, page, ask, status))
    hits = search.structured_content["hits"]
    assert 1 <= len(hits) <= 3 and all(h["path"].endswith("lighthouses.pdf") for h in hits)
    assert set(hits[0]) >= {"path", "page", "score", "text", "chunk_id"}
    assert json.loads(search.content[0].text) == search.structured_content
    assert searched >= 2 and progress[searched - 1][0] == progress[searched - 1][1]  # search reported done
    assert chunk.structured_content["text"] == hits[0]["text"]
    assert page.structured_content["kind"] == "page" and "Eddystone" in page.structured_content["text"]
    answer = ask.structured_content
    assert "1698" in answer["answer"] and not answer["abstained"]
    assert answer["citations"][0]["path"].endswith("lighthouses.pdf")
    assert "support" in answer
    assert len(progress) > searched  # ask reported progress too
    assert status.structured_content["documents"] == 3
    # A shorter evidence budget per call: the best sentence alone still answers.
    assert "1698" in brief.structured_content["answer"]
    assert len(brief.structured_content["answer"]) < len(answer["answer"])


def test_bad_arguments_and_errors_come_back_as_one_line_tool_errors(index, env):
    async def body(session):
        results = [
            await session.call_tool("search", {"query": "tea", "top_k": 0}),
            await session.call_tool("search", {"query": "tea", "mode": "psychic"}),
            await session.call_tool("search", {"query": "tea", "filters": {"colour": "red"}}),
            await session.call_tool("get", {"chunk_id": 99999}),
            await session.call_tool("get", {}),
            await session.call_tool("nonesuch", {}),
        ]
        after = await session.call_tool("search", {"query": "bread dough", "mode": "bm25"})
        return results, after

    results, after = session_run(index, env, body)
    texts = [result.content[0].text for result in results]
    assert all(result.is_error for result in results), texts
    assert all(text.startswith("rag: error: ") and "\n" not in text for text in texts), texts
    assert "top_k" in texts[0] and "mode" in texts[1]
    assert "filters.colour: unknown filter key; known keys are " in texts[2]
    assert "no chunk 99999" in texts[3] and "chunk_id" in texts[4] and "nonesuch" in texts[5]
    assert not after.is_error and after.structured_content["hits"]  # the server carried on


def test_a_filter_error_names_the_filter_as_the_tool_call_wrote_it(index, env):
    """The tools' `filters` object was reported as a `--filter` flag the agent never wrote."""
    objects = [
        (
            {"modified": "yesterday"},
            'filters.modified: "yesterday" is not a date; write an ISO date such as ">=',
        ),
        ({"file_type": "=pdf"}, 'filters.file_type: "=pdf" has one "=" too many; write "pdf"'),
        ({"file_type": True}, 'filters.file_type: true is not a filter value; write a string, e.g. "pdf"'),
        ({"colour": "red"}, "filters.colour: unknown filter key; known keys are "),
    ]

    async def body(session):
        calls = [("search", {"query": "lighthouse"}), ("ask", {"question": "Who built the Pharos?"})]
        return [
            await session.call_tool(tool, {**text, "filters": filters})
            for filters, _ in objects
            for tool, text in calls
        ]

    results = session_run(index, env, body)
    for number, result in enumerate(results):
        said = objects[number // 2][1]
        text = result.content[0].text
        assert result.is_error and "--filter" not in text and "\n" not in text, text
        assert text.startswith(f"rag: error: {said}") or said in text, text


def test_an_argument_of_another_json_type_is_refused_as_the_http_api_refuses_it(index, env):
    async def body(session):
        wrong = [{"top_k": "3"}, {"top_k": True}, {"top_k": 3.0}, {"mode": 1}]
        refused = [await session.call_tool("search", {"query": "tea", **args}) for args in wrong]
        refused.append(await session.call_tool("get", {"chunk_id": "1"}))
        as_text = await session.call_tool(  # a client that sends objects as JSON text
            "search", {"query": "bread dough", "mode": "bm25", "filters": '{"file_type": "md"}'}
        )
        return refused, as_text

    refused, as_text = session_run(index, env, body)
    texts = [result.content[0].text for result in refused]
    assert all(result.is_error for result in refused), texts
    assert texts[:3] == ["rag: error: search: bad arguments: top_k: Input should be a valid integer"] * 3
    assert "mode: Input should be" in texts[3] and "chunk_id: Input should be a valid integer" in texts[4]
    assert not as_text.is_error and as_text.structured_content["hits"][0]["path"].endswith("bread_baking.md")


def test_ask_takes_a_group_and_no_argument_is_silently_dropped(index, env):
    """The ask tool reads the chunk group asked for, as `rag ask --group` and POST /ask do; an
    argument a tool does not take is refused (it was dropped unread: a misspelt top_k, or a
    group passed to ask, gave an answer built from other settings)."""

    async def body(session):
        schema = {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}
        return schema, [
            await session.call_tool("ask", {"question": "tea?", "group": "nosuchgroup"}),
            await session.call_tool("search", {"query": "tea", "topk": 3}),
            await session.call_tool("status", {"verbose": True}),
        ]

    schema, (ask, search, status) = session_run(index, env, body)
    assert "group" in schema["ask"]["properties"]
    texts = [result.content[0].text for result in (ask, search, status)]
    assert all(result.is_error for result in (ask, search, status)), texts
    assert "unknown group 'nosuchgroup'" in texts[0]
    assert (
        texts[1].startswith("rag: error: search: bad arguments: topk: not an argument")
        and "top_k" in texts[1]
    )
    assert (
        texts[2]
        == "rag: error: status: bad arguments: verbose: not an argument of this tool (it takes: no arguments)"
    )


def test_search_takes_what_rag_query_and_post_query_take(index, env):
    """An agent could not set a score floor, a reranker, the fusion or a keyword filter:
    `rag query` and POST /query take them, the search tool did not."""

    async def body(session):
        search = partial(session.call_tool, "search")
        plain = {"query": "lighthouse", "mode": "bm25", "top_k": 10}
        return [
            await search(plain),
            await search({**plain, "require": ["Eddystone"]}),
            await search({**plain, "exclude": ["Eddystone"]}),
            await search({**plain, "min_score": 1e9}),
            await search({**plain, "rerank": "keyword", "require": ["lighthouse"], "top_k": 2}),
            await search({"query": "lighthouse", "mode": "hybrid", "fusion": "rrf", "top_k": 2}),
            await search({**plain, "rerank": "nonesuch"}),
            await search({**plain, "min_score": "high"}),
        ]

    results = session_run(index, env, body)
    assert not any(result.is_error for result in results[:6]), [
        r.content[0].text[:300] for r in results if r.is_error
    ]
    hits = [result.structured_content["hits"] for result in results[:6]]
    everything, required, excluded, floor, reranked, fused = hits
    assert required and all("eddystone" in hit["text"].lower() for hit in required)
    assert excluded and not any("eddystone" in hit["text"].lower() for hit in excluded)
    assert len(required) + len(excluded) == len(everything)
    assert floor == [] and len(reranked) == 2 and len(fused) == 2
    assert results[6].is_error and "rerank" in results[6].content[0].text
    assert results[7].is_error and "min_score" in results[7].content[0].text


def test_missing_index_is_a_tool_error_not_a_crash(tmp_path, env):
    missing = tmp_path / "no-index-here"

    async def body(session):
        search = await session.call_tool("search", {"query": "anything"})
        status = await session.call_tool("status", {})
        return search, status

    search, status = session_run(missing, env, body)
    expected = f"rag: error: no index at {missing}: run `rag ingest DIR` first (or pass --index PATH)"
    cli = subprocess.run(
        [RAG, "query", "anything", "--index", str(missing)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert search.is_error and status.is_error
    assert search.content[0].text == expected == cli.stderr.strip()  # the CLI's own line


@pytest.mark.model
def test_stdout_carries_only_protocol_messages_even_when_a_model_loads(index, env, tmp_path):
    """Raw JSON-RPC over pipes: every stdout line must parse, also after llama.cpp loaded."""
    requests = [
        *handshake("2025-06-18"),
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "ask",
                "arguments": {
                    "question": "How long should bread dough rise?",
                    "answer_style": "generative",
                    "max_tokens": 16,
                },
            },
        },
    ]
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    process = subprocess.Popen(
        [RAG, "mcp", "--index", str(index)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    process.stdin.write(stdin)
    process.stdin.flush()
    lines = []
    while True:  # read until the answer to the tools/call arrives, then close stdin
        line = process.stdout.readline()
        assert line, process.stderr.read()
        lines.append(line)
        if json.loads(line).get("id") == 2:
            break
    process.stdin.close()  # end of input: the server must exit by itself
    rest = process.stdout.read()
    assert process.wait(timeout=120) == 0, process.stderr.read()
    messages = [json.loads(line) for line in lines + rest.splitlines() if line.strip()]
    assert all(message.get("jsonrpc") == "2.0" for message in messages)
    answer = next(message for message in messages if message.get("id") == 2)
    assert answer["result"]["isError"] is False, answer


def handshake(version: str) -> list[dict]:
    """The raw JSON-RPC messages that open a session: `initialize` (id 1), then `initialized`."""
    client = {"name": "raw-test", "version": "0"}
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": client}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def tool_call(request_id: int | str, name: str, arguments: dict) -> dict:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_requests_piped_before_the_end_of_input_are_all_answered(index, env):
    """A script writes its requests and closes stdin at once: no reply may be dropped."""
    requests = [
        *handshake("2025-03-26"),
        tool_call(3, "search", {"query": "lens"}),
        tool_call("four", "status", {}),
        tool_call(5, "ask", {"question": "x"}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}},
        {"jsonrpc": "2.0", "id": 6, "method": "ping"},
    ]
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    done = subprocess.run(
        [RAG, "mcp", "--index", str(index)], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert {1, 3, "four", 6} <= set(replies), done.stdout  # 5 was cancelled: it may go unanswered
    assert replies[3]["result"]["isError"] is False and replies["four"]["result"]["isError"] is False


def test_a_running_server_sees_what_another_process_ingests(tmp_path, env):
    """Started before any index exists (errors per call), then another process ingests twice:
    each next call sees the index as it is now, no restart."""
    path = tmp_path / "late-index"
    docs = tmp_path / "late-docs"
    docs.mkdir()
    shutil.copy(FIXTURES / "docs" / "bread_baking.md", docs / "bread_baking.md")

    def ingest() -> None:
        done = subprocess.run(
            [RAG, "ingest", str(docs), "--index", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr

    async def body(session):
        before = await session.call_tool("status", {})
        await anyio.to_thread.run_sync(ingest)
        first = await session.call_tool("search", {"query": "Eddystone lighthouse", "mode": "bm25"})
        shutil.copy(FIXTURES / "docs" / "lighthouses.pdf", docs / "lighthouses.pdf")
        await anyio.to_thread.run_sync(ingest)
        second = await session.call_tool("search", {"query": "Eddystone lighthouse", "mode": "hybrid"})
        status = await session.call_tool("status", {})
        return before, first, second, status

    before, first, second, status = session_run(path, env, body)
    assert before.is_error and "no index at" in before.content[0].text
    assert not first.is_error and not first.structured_content["hits"]
    assert second.structured_content["hits"][0]["path"].endswith("lighthouses.pdf")
    assert status.structured_content["documents"] == 2


@pytest.mark.model
def test_tool_defaults_come_from_the_settings_as_for_rag_ask(index, env, tmp_path):
    """RAG_MODE and the config file's answer_style and top_k reach the agent's search and ask,
    and the agent's answer is `rag ask --json`'s."""
    config = tmp_path / "config.toml"
    config.write_text('answer_style = "generative"\ntop_k = 2\nmax_tokens = 4\n')
    settings_env = {**env, "RAG_MODE": "bm25", "RAG_CONFIG": str(config)}
    question = "When was the Eddystone Lighthouse first lit?"

    async def body(session):
        search = await session.call_tool("search", {"query": "Eddystone lighthouse"})
        ask = await session.call_tool("ask", {"question": question})
        return search, ask

    search, ask = session_run(index, settings_env, body)
    assert not search.is_error and not ask.is_error
    assert search.structured_content["mode"] == "bm25" and len(search.structured_content["hits"]) <= 2
    answer = ask.structured_content
    assert answer["model"] not in ("evidence", "extractive")  # the configured style: generative
    cli = subprocess.run(
        [RAG, "ask", question, "--index", str(index), "--json", "--no-cache"],
        env=settings_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    record = json.loads(cli.stdout)
    assert (record["model"], record["answer"]) == (answer["model"], answer["answer"])
    assert len(record["sources"]) <= 2
