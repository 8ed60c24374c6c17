"""Nothing leaves the machine: the environment that keeps every dependency offline.

Some dependencies phone home unless told not to, and they read the switch once, when they
are imported: onnxruntime queues telemetry events (OS, CPU, a device id) in
``$XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime/onnxruntime.db`` and looks up its
telemetry host, unless ``ORT_DISABLE_TELEMETRY=1`` is set before ``import onnxruntime``
(``ort.disable_telemetry_events()`` after the import does not stop the look-ups).
``keep_offline`` runs when the ``ragcli`` package is imported, so it comes first for the
CLI, ``rag mcp`` and the library's ``open_index`` alike, and child processes inherit it.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

# Telemetry switches: always on. A user cannot opt ragcli into telemetry by accident.
TELEMETRY_OFF: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",  # onnxruntime: no events, no onnxruntime.db
    "HF_HUB_DISABLE_TELEMETRY": "1",  # huggingface_hub (pulled in by the model packages)
    "DO_NOT_TRACK": "1",  # the cross-tool convention (huggingface_hub and others read it)
    "OTEL_SDK_DISABLED": "true",  # the MCP SDK's OpenTelemetry spans: never exported
}

# Hub look-ups: off unless the user has said otherwise. ragcli only reads local model files.
HUB_OFFLINE: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def keep_offline(environ: MutableMapping[str, str] | None = None) -> None:
    """Set the telemetry switches off and the model hubs offline, before any import of them."""
    env = os.environ if environ is None else environ
    env.update(TELEMETRY_OFF)
    for name, value in HUB_OFFLINE.items():
        env.setdefault(name, value)
