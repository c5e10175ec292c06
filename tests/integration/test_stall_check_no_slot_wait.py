"""The stall ladder's look at the server (patch stall-waits-for-worker) waits for no activity
slot. review19: on a worker serving every kind (agents on the leader's own queue) whose slots
stuck agents all held, the look (an activity on that queue) waited behind them — no rung, and
the leader's loop held, until one of them ended on its own (its start-to-close: 600 s)."""

from __future__ import annotations

from typing import Any

import pytest

import worker as worker_module
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board, plan
from xsky.plan.agent_config import StallWindows
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


def stuck(i: int) -> str:
    return (
        f'<agent name="shell" id="{i}"><task>wait</task>'
        '<config>{"tool": "shell", "command": "sleep 60"}</config></agent>'
    )


async def test_the_ladder_climbs_with_every_slot_held_by_stuck_agents(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = worker_module.Worker

    def two_slots(*a: Any, **kw: Any) -> Any:
        if kw.get("max_concurrent_activities") == 400:  # the leader's, serving every kind
            kw["max_concurrent_activities"] = 2
        return real(*a, **kw)

    monkeypatch.setattr(worker_module, "Worker", two_slots)
    await env.start_worker()  # every kind: agents run on the leader's queue
    handle = await env.start(
        plan(stuck(1), stuck(2)),
        options=RunOptions(
            max_parallel=2,
            max_auto_replans=0,
            stall=StallWindows(nudge_after=1.0, restart_after=2.0),
        ),
    )

    async def escalated() -> None:
        b = await board(handle)
        notes = [b[i].last_progress or "" for i in ("1", "2")]
        assert all(n.startswith("escalated") for n in notes), notes

    try:
        await eventually(escalated, timeout=30)  # (held, nothing climbed before 60 s)
    finally:
        await handle.terminate()
