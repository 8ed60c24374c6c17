"""`rag serve` under load: 50 concurrent clients on /query, warm latency against in-process, /ask queueing.

Usage:
    python benchmarks/bench_serve.py INDEX [--seconds 60] [--clients 50] [--modes bm25,hybrid]
                                           [--queries queries.jsonl] [--samples 100]

Everything goes to a `rag serve` this script starts on a free 127.0.0.1 port and stops at the end;
every phase is bounded in time or in count.

1. Load: --clients concurrent clients send POST /query (top_k 10) back to back for --seconds per
   mode; prints requests per second and p50/p95/p99 latency (client side, HTTP included).
2. Warm single-client latency: --samples sequential /query requests per mode, against the same
   search through the in-process Python API (`ragcli.open_index(INDEX).search`, models warm);
   prints both p50s and their ratio (the target: hybrid within 1.5x).
3. /ask queueing: 2 x (queue + 1) questions at once (extractive answers); prints how many were
   answered and how many were refused with 503 + Retry-After, and the answered ones' latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx  # the HTTP client the MCP SDK brings

DEFAULT_QUERIES = (
    "when was the lighthouse first lit",
    "how is sourdough bread leavened",
    "what does the starter contain",
    "who invented the lens",
    "history of tea in china",
    "how tall was the tower",
)
QUEUE = 4


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def load_queries(path: str | None) -> list[str]:
    if path is None:
        return list(DEFAULT_QUERIES)
    lines = Path(path).read_text().splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()][:500]


def start_server(index: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["serve", "--index", index, "--port", str(port), "--queue", str(QUEUE)]
    child = subprocess.Popen([sys.executable, "-m", "ragcli", *args], stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return child, base
        except httpx.TransportError:
            time.sleep(0.2)
    child.kill()
    raise SystemExit("rag serve did not start in 120 s")


async def load(base: str, mode: str, queries: list[str], clients: int, seconds: float) -> None:
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds

    async def client(number: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        turn = number
        while time.monotonic() < stop:
            body = {"query": queries[turn % len(queries)], "mode": mode, "top_k": 10}
            started = time.perf_counter()
            response = await http.post(f"{base}/query", json=body, timeout=120)
            latencies.append(time.perf_counter() - started)
            errors += response.status_code != 200
            turn += clients

    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(limits=limits) as http:
        began = time.monotonic()
        await asyncio.gather(*(client(number, http) for number in range(clients)))
        elapsed = time.monotonic() - began
    print(
        f"/query {mode:6} {clients} clients {elapsed:.0f} s: {len(latencies) / elapsed:.1f} req/s, "
        f"p50 {percentile(latencies, 0.5) * 1000:.0f} ms, p95 {percentile(latencies, 0.95) * 1000:.0f} ms, "
        f"p99 {percentile(latencies, 0.99) * 1000:.0f} ms, {len(latencies)} requests, {errors} errors"
    )


def warm_latency(base: str, index: str, mode: str, queries: list[str], samples: int) -> None:
    import ragcli

    served, local = [], []
    with httpx.Client() as http, ragcli.open_index(index) as opened:
        opened.search(queries[0], mode=mode, top_k=10)  # models warm on both sides
        http.post(f"{base}/query", json={"query": queries[0], "mode": mode}, timeout=120)
        # Blocks of 10 in turn: load drifts hit both alike, while the two processes' ONNX thread
        # pools do not alternate request by request (side by side they slow each other).
        for turn in range(2 * samples):
            query = queries[(turn // 20 * 10 + turn % 10) % len(queries)]  # both sides: the same queries
            started = time.perf_counter()
            if (turn // 10) % 2 == 0:
                http.post(f"{base}/query", json={"query": query, "mode": mode, "top_k": 10}, timeout=120)
                served.append(time.perf_counter() - started)
            else:
                opened.search(query, mode=mode, top_k=10)
                local.append(time.perf_counter() - started)
    served_p50, local_p50 = statistics.median(served), statistics.median(local)
    print(
        f"/query {mode:6} one client, warm: served p50 {served_p50 * 1000:.1f} ms, in-process p50 "
        f"{local_p50 * 1000:.1f} ms, ratio {served_p50 / local_p50:.2f} ({samples} each)"
    )


async def ask_queue(base: str, queries: list[str]) -> None:
    count = 2 * (QUEUE + 1)
    outcomes: list[tuple[int, float, str | None]] = []

    async def one(question: str, http: httpx.AsyncClient) -> None:
        started = time.perf_counter()
        body = {"question": question, "answer_style": "extractive"}
        response = await http.post(f"{base}/ask", json=body, timeout=300)
        outcomes.append(
            (response.status_code, time.perf_counter() - started, response.headers.get("retry-after"))
        )

    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=count)) as http:
        await asyncio.gather(*(one(queries[n % len(queries)], http) for n in range(count)))
    answered = [seconds for status, seconds, _ in outcomes if status == 200]
    refused = [after for status, _, after in outcomes if status == 503]
    print(
        f"/ask {count} at once, queue {QUEUE}: {len(answered)} answered "
        f"(p50 {statistics.median(answered):.2f} s, max {max(answered):.2f} s), "
        f"{len(refused)} refused with 503 (Retry-After {set(refused) or '-'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("index")
    parser.add_argument("--seconds", type=float, default=60.0, help="load time per mode (default 60)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--modes", default="bm25,hybrid")
    parser.add_argument("--queries", help="a BEIR queries.jsonl (default: a few built-in queries)")
    parser.add_argument("--samples", type=int, default=100, help="sequential requests per mode")
    args = parser.parse_args()
    args.clients = max(1, min(args.clients, 200))
    args.seconds = max(1.0, min(args.seconds, 600.0))
    queries = load_queries(args.queries)
    child, base = start_server(os.path.abspath(args.index))
    try:
        for mode in args.modes.split(","):
            asyncio.run(load(base, mode, queries, args.clients, args.seconds))
        for mode in args.modes.split(","):
            warm_latency(base, args.index, mode, queries, min(args.samples, 1000))
        asyncio.run(ask_queue(base, queries))
    finally:
        child.terminate()
        child.wait(timeout=30)


if __name__ == "__main__":
    main()
