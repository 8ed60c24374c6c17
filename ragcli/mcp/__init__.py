"""`rag mcp`: the MCP server (`ragcli.mcp.server`), the tools it offers agents
(`ragcli.mcp.tools`) and the forked worker that runs them (`ragcli.mcp.worker`).

Imports of the MCP SDK inside this package are absolute (`from mcp.server... import ...`), so
they name the SDK's top-level `mcp`, never this package (`ragcli.mcp`).
"""
