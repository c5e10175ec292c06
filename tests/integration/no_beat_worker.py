"""worker.py that sends the server no worker heartbeats: the server never lists it, as it lists
no worker before its first heartbeat (one interval after the worker starts, or its first
activity's) — a host a test kills "before its first heartbeat" whatever the machine's speed.

It still tells the store, as a worker of this version does, that it sends heartbeats (a new
worker killed before its first one); with ``XSKY_TEST_OLDER=1`` it does not (an older worker,
which never beats: activities/hosts.py ``_served`` waits for its polls as long as a long poll).

Run as ``python tests/integration/no_beat_worker.py <worker.py's arguments>``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import worker
from activities import telemetry
from activities.sandbox import secrets

_runtime = telemetry.Runtime


def _no_beats(**kwargs: Any) -> Any:
    kwargs["worker_heartbeat_interval"] = None
    return _runtime(**kwargs)


async def _says_nothing(*args: Any) -> None:
    return None


if __name__ == "__main__":
    # worker.main re-executes its program without secret variables (an S3 store's key): this
    # script, not worker.py, is the one re-executed, or the worker beats after all (chaos14:
    # it did, and test_host_lost_early skipped as "listed before it could be killed")
    secrets.hide_from_environment([os.path.abspath(__file__), *sys.argv[1:]])
    telemetry.Runtime = _no_beats  # type: ignore[misc,assignment]
    if os.environ.get("XSKY_TEST_OLDER") == "1":
        worker.say_it_beats = _says_nothing  # type: ignore[assignment]
    code = worker.main()
    sys.stdout.flush()
    os._exit(code)
