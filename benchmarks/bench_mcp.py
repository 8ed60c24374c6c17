"""`rag mcp` figures: cold start to the first search answer, and per-call overhead.

Usage:
    python benchmarks/bench_mcp.py INDEX [--runs 10] [--calls 200] [--modes bm25,hybrid]
    python benchmarks/bench_mcp.py INDEX --cold-once     # one cold start + search, as one process

1. Cold start: spawn the installed `rag mcp --index INDEX` with the SDK's stdio client,
   initialize, call `search` once (hybrid, default models); the wall time from spawn to
   the answer, median over --runs fresh servers.
2. Per-call overhead: in one warm server, a `search` call through MCP and the same
   `IndexTools.search` call in-process (same index, query and options, models warm), taken
   in turn; the median of the pair differences over --calls pairs, per --modes mode.
   bm25 isolates the transport (MCP, the server's pipe to its worker). With hybrid, two
   ONNX sessions in two processes take turns on the 2 cores and slow each other under load
   (likely onnxruntime's thread pools spinning after each query): pair differences from -3
   to +23 ms between runs at load 11, an artefact of measuring side by side; a server alone
   runs one session (alone, the worker's and an in-process hybrid search took alike, 31-40 ms).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

QUERY = {"query": "when was the lighthouse first lit", "mode": "hybrid", "top_k": 5}


def server(index: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=shutil.which("rag") or "rag", args=["mcp", "--index", index], env=dict(os.environ)
    )


def descendants_cpu_seconds() -> float:
    """User+system CPU so far of this process's live descendants (the server and its worker)."""
    parents, ticks = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid], ticks[pid] = int(fields[1]), int(fields[11]) + int(fields[12])
    family, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in family} - family
        family, grew = family | more, bool(more)
    return sum(ticks[pid] for pid in family - {os.getpid()}) / os.sysconf("SC_CLK_TCK")


async def cold_once(index: str) -> tuple[float, float]:
    """Wall seconds from spawning the server to the first search answer, and the server's CPU."""
    started = time.perf_counter()
    async with stdio_client(server(index), errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search", QUERY)
            assert not result.is_error, result.content
            return time.perf_counter() - started, descendants_cpu_seconds()


async def per_call(index: str, calls: int, mode: str) -> tuple[list[float], list[float]]:
    """MCP and in-process library times of the same search, taken in turn (pairs), so a
    change in the machine's load affects both alike."""
    from ragcli import open_index
    from ragcli.mcp.tools import IndexTools

    tools = IndexTools(open_index(index))
    query = {**QUERY, "mode": mode}
    arguments = {key: value for key, value in query.items() if key != "query"}
    async with stdio_client(server(index), errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(5):
                await session.call_tool("search", query)
                tools.search(query["query"], **arguments)
            via_mcp, direct = [], []
            for _ in range(calls):
                started = time.perf_counter()
                result = await session.call_tool("search", query)
                via_mcp.append(time.perf_counter() - started)
                assert not result.is_error
                started = time.perf_counter()
                tools.search(query["query"], **arguments)
                direct.append(time.perf_counter() - started)
    tools.close()
    return via_mcp, direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("index")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--modes", default="bm25,hybrid", help="search modes of the per-call figure")
    parser.add_argument("--cold-once", action="store_true")
    args = parser.parse_args()
    if args.cold_once:
        print("%.3f %.3f" % anyio.run(cold_once, args.index))
        return
    runs = [anyio.run(cold_once, args.index) for _ in range(args.runs)]
    colds, cpus = [wall for wall, _ in runs], [cpu for _, cpu in runs]
    print(
        f"cold start to first search answer: median {statistics.median(colds):.3f} s wall "
        f"(min {min(colds):.3f}, max {max(colds):.3f}), server CPU median {statistics.median(cpus):.2f} s "
        f"({args.runs} runs)"
    )
    for mode in args.modes.split(","):
        mcp, library = anyio.run(per_call, args.index, args.calls, mode)
        overhead = statistics.median(a - b for a, b in zip(mcp, library))
        print(
            f"{mode} search via MCP: median {statistics.median(mcp) * 1000:.2f} ms; same IndexTools.search "
            f"in-process: {statistics.median(library) * 1000:.2f} ms; per-call overhead (median of pair "
            f"differences) {overhead * 1000:.2f} ms ({args.calls} calls each)"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
