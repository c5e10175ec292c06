"""worker.py that sends the server no worker heartbeats: the server never lists it, as it lists
no worker before its first heartbeat (one interval after the worker starts, or its first
activity's) — a host a test kills "before its first heartbeat" whatever the machine's speed.

Run as ``python tests/integration/no_beat_worker.py <worker.py's arguments>``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import worker
from activities import telemetry

_runtime = telemetry.Runtime


def _no_beats(**kwargs: Any) -> Any:
    kwargs["worker_heartbeat_interval"] = None
    return _runtime(**kwargs)


if __name__ == "__main__":
    telemetry.Runtime = _no_beats  # type: ignore[misc,assignment]
    code = worker.main()
    sys.stdout.flush()
    os._exit(code)
