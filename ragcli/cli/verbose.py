"""`-v`: what rag did (index, model, mode, time per stage) on stderr; `-vv`: library logs too.

The library reports through `logging` (loggers under `ragcli`); it never prints. One `-v`
shows ragcli's INFO records only; third-party loggers (faiss's loader, pypdf, httpx) stay at
WARNING until `-vv`, so `-v` is about rag, not about the libraries it uses.
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger("ragcli")


def configure_logging(verbose: int) -> None:
    """Route records to stderr: ragcli's from -v, everyone's from -vv (debug from -vvv)."""
    handler = logging.StreamHandler(sys.stderr)
    layout = "rag: %(message)s" if verbose < 2 else "rag: %(name)s: %(message)s"
    handler.setFormatter(logging.Formatter(layout))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose >= 3 else logging.INFO if verbose >= 2 else logging.WARNING)
    log.setLevel(logging.DEBUG if verbose >= 3 else logging.INFO if verbose >= 1 else logging.WARNING)
    # llama.cpp's own lines (model loading, about 50 of them) are library internals: -vv.
    logging.getLogger("ragcli.llama").setLevel(
        logging.DEBUG if verbose >= 3 else logging.INFO if verbose >= 2 else logging.WARNING
    )
    # Parser libraries (pypdf) log recoverable oddities; the per-file report already says
    # what matters, so keep their warnings off the terminal unless asked for.
    logging.getLogger("pypdf").setLevel(logging.INFO if verbose >= 2 else logging.ERROR)
    # Milvus Lite runs a gRPC server inside the process; it logs calls the client probes and the
    # server does not implement (AllocTimestamp) as tracebacks, though nothing failed. A real
    # failure reaches rag as an exception and becomes its one error line; -vv shows the logs.
    for noisy in _EMBEDDED_SERVER_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.INFO if verbose >= 2 else logging.CRITICAL + 1)


_EMBEDDED_SERVER_LOGGERS = ("grpc", "milvus_lite", "pymilvus")
