"""Nothing leaves the machine, proven: the real `rag` in a network namespace of its own, traced.

Each command (`rag ingest`, `rag query`, `rag ask` with the default and with a GGUF model, one
MCP SDK client call to `rag mcp`) runs under `unshare -n` (no network but loopback) and
`strace -f`, and the test fails on any connect/sendto to a non-loopback address, on any file
opened for writing outside the index, the cache folder and the config folder, and on anything
left in the sandbox's HOME or TMPDIR outside them (onnxruntime's telemetry database under
`$XDG_CACHE_HOME/Microsoft` was the one found). It needs root (for the namespace) and strace;
CI runs as root and installs strace (.ci/run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import FIXTURES, shared_model_files

REPO = Path(__file__).resolve().parent.parent


def _namespace_problem() -> str | None:
    if shutil.which("strace") is None:
        return "strace is not installed (CI installs it: apt-get install strace)"
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    try:
        done = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, timeout=30)
    except OSError as error:
        return f"unshare failed: {error}"
    if done.returncode != 0:
        return f"unshare -n is not permitted here ({done.stderr.strip() or 'not root'})"
    return None


pytestmark = pytest.mark.skipif(_namespace_problem() is not None, reason=str(_namespace_problem()))

MCP_CLIENT = textwrap.dedent(
    """
    import os
    import sys
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def main():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "ragcli", "mcp", "--index", sys.argv[1]], env=dict(os.environ)
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("search", {"query": "lighthouse keeper"})
                assert not result.is_error, result.content
                print(result.content[0].text)

    anyio.run(main)
    """
)

_CONNECT = re.compile(r"\b(connect|sendto)\((\d+), \{sa_family=(AF_INET6?),[^}]*\}")
_ADDRESS = re.compile(r'(?:inet_addr|inet_pton\(AF_INET6?, )\("?([0-9a-fA-F:.]+)"?\)?')
_WRITE_OPEN = re.compile(r'\bopenat\(AT_FDCWD, "([^"]+)", ([A-Z_|]+)(?:, \d+)?\) = \d+')
_MAKE_DIR = re.compile(r'\bmkdir(?:at)?\((?:AT_FDCWD, )?"([^"]+)", \d+\) = 0')


def _is_loopback(address: str) -> bool:
    return address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1")


def outside_connections(trace: str) -> list[str]:
    """Every connect/sendto line aimed at an internet address other than loopback."""
    bad = []
    for line in trace.splitlines():
        if not _CONNECT.search(line):
            continue
        address = _ADDRESS.search(line)
        if address is None or not _is_loopback(address.group(1)):
            bad.append(line)
    return bad


def written_paths(trace: str) -> set[str]:
    """Every path successfully opened for writing or created as a folder."""
    paths = set()
    for line in trace.splitlines():
        opened = _WRITE_OPEN.search(line)
        if opened and re.search(r"O_WRONLY|O_RDWR|O_CREAT", opened.group(2)):
            paths.add(opened.group(1))
        made = _MAKE_DIR.search(line)
        if made:
            paths.add(made.group(1))
    return paths


@pytest.fixture
def sandbox(tmp_path, model_cache_dir) -> dict:
    home = tmp_path / "home"
    docs = tmp_path / "docs"
    for folder in (home, docs, tmp_path / "tmp"):
        folder.mkdir()
    for name in ("lighthouses.pdf", "bread_baking.md", "chinese_tea.txt"):
        shutil.copy(FIXTURES / "docs" / name, docs / name)
    (tmp_path / "mcp_client.py").write_text(MCP_CLIENT)
    cache = shared_model_files(home / ".cache" / "ragcli", model_cache_dir)
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("RAG_", "XDG_"))}
    for name in ("ORT_DISABLE_TELEMETRY", "DO_NOT_TRACK", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        environ.pop(name, None)  # ragcli must set these itself
    environ.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        TMPDIR=str(tmp_path / "tmp"),
        RAG_INDEX=str(tmp_path / "index"),
        RAG_CACHE_DIR=str(cache),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        # Python's own bytecode cache beside the sources (written once by any install) is not
        # ragcli's doing; keeping it off leaves only ragcli's writes in the trace.
        PYTHONDONTWRITEBYTECODE="1",
    )
    allowed = [tmp_path / "index", cache, model_cache_dir, home / ".config" / "ragcli"]
    return {"root": tmp_path, "env": environ, "docs": docs, "allowed": allowed}


def run_offline(sandbox: dict, name: str, *command: str) -> subprocess.CompletedProcess:
    log = sandbox["root"] / f"{name}.strace"
    traced = ["strace", "-f", "-qq", "-s", "256", "-o", str(log)]
    traced += ["-e", "trace=connect,sendto,openat,mkdir,mkdirat"]
    done = subprocess.run(
        ["unshare", "-n", *traced, *command],
        env=sandbox["env"],
        cwd=sandbox["root"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{name}: {done.stderr[-3000:]}"
    trace = log.read_text()
    assert outside_connections(trace) == [], f"{name} tried to reach the network"
    resolved = [
        Path(path) if path.startswith("/") else sandbox["root"] / path for path in written_paths(trace)
    ]
    allowed = [path.resolve() for path in sandbox["allowed"]] + [Path("/dev"), Path("/proc")]
    strays = sorted(
        str(path) for path in resolved if not any(path.resolve().is_relative_to(root) for root in allowed)
    )
    assert strays == [], f"{name} wrote outside the index, cache and config folders"
    return done


def leftovers(sandbox: dict) -> list[str]:
    """Files left in HOME and TMPDIR outside the allowed folders."""
    allowed = [path.resolve() for path in sandbox["allowed"]]
    found = []
    for top in (sandbox["root"] / "home", sandbox["root"] / "tmp"):
        for path in top.rglob("*"):
            if path.is_file() and not any(path.resolve().is_relative_to(root) for root in allowed):
                found.append(str(path))
    return sorted(found)


def test_ingest_query_ask_and_mcp_never_reach_the_network_nor_write_outside(sandbox):
    rag = [sys.executable, "-m", "ragcli"]
    run_offline(sandbox, "ingest", *rag, "ingest", str(sandbox["docs"]))
    query = run_offline(sandbox, "query", *rag, "query", "lighthouse keeper", "-k", "2")
    assert "lighthouses.pdf" in query.stdout
    run_offline(sandbox, "ask", *rag, "ask", "What did lighthouse keepers do?")
    run_offline(
        sandbox, "ask-gguf", *rag, "ask", "What did lighthouse keepers do?", "--model", "smollm2-135m"
    )
    mcp = run_offline(
        sandbox, "mcp", sys.executable, str(sandbox["root"] / "mcp_client.py"), str(sandbox["root"] / "index")
    )
    assert "lighthouses.pdf" in mcp.stdout
    assert leftovers(sandbox) == []
    assert not (sandbox["root"] / "home" / ".cache" / "Microsoft").exists()


def test_the_trace_checks_catch_what_they_look_for():
    """The parsers themselves, on lines as strace prints them (so a silent regex cannot pass)."""
    trace = "\n".join(
        [
            '7 connect(5, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16) = -1',
            '7 connect(5, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
            '7 connect(6, {sa_family=AF_UNIX, sun_path="/run/x"}, 110) = 0',
            "7 connect(5, {sa_family=AF_INET6, sin6_port=htons(443), "
            'inet_pton(AF_INET6, "2001:db8::1", &sin6_addr)}, 28) = -1',
            '7 openat(AT_FDCWD, "/home/x/.cache/Microsoft/db", O_RDWR|O_CREAT|O_CLOEXEC, 0644) = 4',
            '7 openat(AT_FDCWD, "/etc/hosts", O_RDONLY|O_CLOEXEC) = 3',
            '7 mkdir("/home/x/.cache/Microsoft", 0777) = 0',
        ]
    )
    bad = outside_connections(trace)
    assert len(bad) == 2 and "10.0.0.2" in bad[0] and "2001:db8::1" in bad[1]
    assert written_paths(trace) == {"/home/x/.cache/Microsoft/db", "/home/x/.cache/Microsoft"}
