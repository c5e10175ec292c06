"""xsky's Python API: start, watch and steer durable runs. The CLI is built on it.

    from xsky.client import XSky

    async with XSky.connect() as x:
        run = await x.run("examples/demo.xml", variables={"site": "example.com"})
        async for page in run.follow():          # the board, each time it changes
            print(page.counts)
        result = await run.result()              # RunResult, completed or failed

Connection settings come from Temporal's environment configuration (``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, TLS, profiles of the Temporal config file),
so Temporal Cloud works unchanged; everything else from :class:`xsky.config.Settings`.
Every mistake a person can fix raises a :class:`xsky.errors.XSkyError` whose message is
one sentence with the fix.
"""

from __future__ import annotations

from xsky.client._consts import PICKUP_WAIT
from xsky.client.connect import connect_client
from xsky.client.handle import XSky
from xsky.client.listing import list_query
from xsky.client.outcome import result_of, run_outcome
from xsky.client.run import Run
from xsky.client.settings import resolve_permissions, resolve_roles
from xsky.client.skills import Skills, SkillsStatus
from xsky.client.start import check_names, new_run_id
from xsky.client.values import ConnectionLost, RunStatus, RunSummary, WorkerSilent
from xsky.client.workers import picked_up, queue_pollers
from xsky.errors import XSkyError
from xsky.leader.state import BoardPage
from xsky.plan.files import PlanError

__all__ = [
    "PICKUP_WAIT",
    "BoardPage",
    "ConnectionLost",
    "PlanError",
    "Run",
    "RunStatus",
    "RunSummary",
    "Skills",
    "SkillsStatus",
    "WorkerSilent",
    "XSky",
    "XSkyError",
    # the building blocks the CLI and scripts compose (each documented where it is defined)
    "check_names",
    "connect_client",
    "list_query",
    "new_run_id",
    "picked_up",
    "queue_pollers",
    "resolve_permissions",
    "resolve_roles",
    "result_of",
    "run_outcome",
]
