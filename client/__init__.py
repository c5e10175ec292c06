"""xsky's Python API: start, watch and steer durable runs. The CLI is built on it.

    from client import XSky

    async with XSky.connect() as x:
        run = await x.run("examples/demo.xml", variables={"site": "example.com"})
        async for page in run.follow():          # the board, each time it changes
            print(page.counts)
        result = await run.result()              # RunResult, completed or failed

It is the top layer of the library, above workflows/ and activities/ (it starts their work on
Temporal) and the pure core, xsky/. Connection settings come from Temporal's environment
configuration (``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, TLS,
profiles of the Temporal config file), so Temporal Cloud works unchanged; everything else from
:class:`xsky.config.Settings`. Every mistake a person can fix raises a
:class:`xsky.errors.XSkyError` whose message is one sentence with the fix.

``__all__`` holds what a user of the API meets: the connection, a run, what they hand back and
the errors worth catching. The building blocks the CLI and the tests compose are imported from
their own modules (``client.start``, ``client.outcome``, ``client.workers`` …).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from client.handle import XSky
    from client.run import Run
    from client.skills import Skills, SkillsStatus
    from client.values import ConnectionLost, RunStatus, RunSummary, WorkerSilent
    from xsky.errors import (
        ConnectError,
        NoWorkerError,
        PlanError,
        RefusedError,
        RunEndedError,
        RunNotFoundError,
        UnservedRunError,
        UsageError,
        XSkyError,
    )
    from xsky.leader.state import BoardPage
    from xsky.runs import AgentReport, RunOptions, RunResult

# Where each name lives, imported when first used: `from client import settings` (or a CLI
# command that never connects) does not pay for Temporal's client and the leader's code.
_HOMES = {
    "XSky": "client.handle",
    "Run": "client.run",
    "Skills": "client.skills",
    "SkillsStatus": "client.skills",
    **dict.fromkeys(("ConnectionLost", "RunStatus", "RunSummary", "WorkerSilent"), "client.values"),
    **dict.fromkeys(
        (
            "ConnectError",
            "NoWorkerError",
            "PlanError",
            "RefusedError",
            "RunEndedError",
            "RunNotFoundError",
            "UnservedRunError",
            "UsageError",
            "XSkyError",
        ),
        "xsky.errors",
    ),
    "BoardPage": "xsky.leader.state",
    **dict.fromkeys(("AgentReport", "RunOptions", "RunResult"), "xsky.runs"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'client' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "AgentReport",
    "BoardPage",
    "ConnectError",
    "ConnectionLost",
    "NoWorkerError",
    "PlanError",
    "RefusedError",
    "Run",
    "RunEndedError",
    "RunNotFoundError",
    "RunOptions",
    "RunResult",
    "RunStatus",
    "RunSummary",
    "Skills",
    "SkillsStatus",
    "UnservedRunError",
    "UsageError",
    "WorkerSilent",
    "XSky",
    "XSkyError",
]
