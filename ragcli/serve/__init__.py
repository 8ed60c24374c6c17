"""`rag serve`: the index over HTTP: a JSON API, MCP's streamable-HTTP transport and a page.

- `ragcli.serve.engine`: the open index and its models, searches on one thread, answers on
  another behind a bounded queue (so a slow answer never holds up a search or /health).
- `ragcli.serve.bodies`: the request bodies, validated, and the OpenAPI schema made from them.
- `ragcli.serve.files`: an indexed document's file, and nothing else, for the page's citations.
- `ragcli.serve.app`: the Starlette application: routes, token, CORS, body cap, /mcp.

Starlette and uvicorn come with the MCP SDK, which ragcli already depends on for `rag mcp`:
serving over them adds no dependency. FastAPI would add its own package (and a docs page
nobody here needs) for what pydantic models and a few routes already give.
"""
