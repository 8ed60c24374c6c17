"""Running the app under uvicorn (the ASGI server the MCP SDK brings).

The listening socket is bound here, before uvicorn starts, so that a port in use or an
address this machine does not have is one `RagError` line (exit 1) naming the flag to
change, instead of uvicorn's log line and its own exit code 3; and so that the CLI says
"serving on" only once the socket really listens.
"""

from __future__ import annotations

import errno
import socket
from typing import TYPE_CHECKING

from ragcli.errors import AddressUnavailable, RagError

if TYPE_CHECKING:
    from ragcli.index import Index
    from ragcli.serve.app import ServeOptions

BACKLOG = 2048  # uvicorn's default


def bind(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port`, as uvicorn would bind it.

    Raises:
        AddressUnavailable: the port is in use, the host is not an address of this
            machine, or the port needs privileges.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as error:
        sock.close()
        raise AddressUnavailable(_bind_problem(host, port, error)) from None
    sock.set_inheritable(True)
    return sock


def _bind_problem(host: str, port: int, error: OSError) -> str:
    """One line saying why `host`:`port` cannot be listened on, and which flag changes it."""
    if error.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is already in use: choose another with --port"
    if error.errno == errno.EACCES:
        return f"port {port} on {host} needs privileges: choose one above 1023 with --port"
    if error.errno == errno.EADDRNOTAVAIL or isinstance(error, socket.gaierror):
        return f"--host {host} is not an address of this machine: pass one of its addresses, or 127.0.0.1"
    return f"cannot listen on {host} port {port}: {error.strerror or error}"


def run(search_index: Index, answer_index: Index, options: ServeOptions, sock: socket.socket) -> None:
    """Serve on `sock` until interrupted; uvicorn's access log is off (requests may carry questions).

    Raises:
        RagError: the application did not start (uvicorn has logged why).
    """
    import uvicorn

    from ragcli.serve.app import build_app
    from ragcli.serve.engine import Engine

    engine = Engine(
        search_index, answer_index, queue_size=options.queue_size, ask_timeout=options.ask_timeout
    )
    config = uvicorn.Config(
        build_app(engine, options),
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=5,
        limit_concurrency=200,
        backlog=BACKLOG,
    )
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C is the documented way to stop serving, as under uvicorn.run
        pass
    finally:
        sock.close()
    if not server.started:
        raise RagError(f"rag serve did not start on {options.host} port {options.port} (see above)")
