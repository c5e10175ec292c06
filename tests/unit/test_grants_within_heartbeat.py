"""An attempt asks its leader to confirm its grants before it heartbeats, so the asking ends
within half its heartbeat timeout (activities/agents/grants.py): the last question, asked just
before the patience ran out, waits only what is left of it — not a query's whole deadline
more (5 s by default)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import timedelta
from typing import Any

from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from activities.agents.grants import GrantChecks
from tests.unit.test_grants import APPROVAL, carrying
from xsky.config import load_settings

QUEUE = "grants-hb"


class SlowLeader:
    """A run that is described at once (no workflow task waits) but whose queries are answered
    only past their deadline: a leader busy with a long workflow task."""

    def __init__(self) -> None:
        self.id = "xsky-hb"

    async def describe(self, rpc_timeout: timedelta | None = None) -> Any:
        return dataclasses.make_dataclass("D", ["task_queue", "raw_description"])(
            QUEUE, DescribeWorkflowExecutionResponse()
        )

    async def query(self, *args: Any, rpc_timeout: timedelta | None = None, **kw: Any) -> Any:
        assert rpc_timeout is not None
        await asyncio.sleep(rpc_timeout.total_seconds())
        raise RPCError("deadline exceeded", RPCStatusCode.DEADLINE_EXCEEDED, b"")


class Client:
    def get_workflow_handle(self, *args: Any, **kw: Any) -> SlowLeader:
        return SlowLeader()


async def test_a_busy_leader_is_asked_within_half_the_heartbeat_timeout():
    # the query deadline (1 s) is most of the patience (half a 2.4 s heartbeat timeout)
    settings = load_settings({"XSKY_TASK_QUEUE": QUEUE, "XSKY_STICKY_TIMEOUT": "2"})
    assert settings.query_timeout == timedelta(seconds=1)
    env = ActivityEnvironment(client=Client())  # type: ignore[arg-type]
    env.info = dataclasses.replace(
        env.info,
        workflow_type="LeaderWorkflow",
        workflow_id="xsky-hb",
        workflow_run_id="r1",
        task_queue=f"{QUEUE}-shell",
        heartbeat_timeout=timedelta(seconds=2.4),
    )
    began = time.monotonic()
    try:
        await env.run(GrantChecks(settings).confirm, carrying(approvals=[APPROVAL]))
    except ApplicationError as e:
        assert e.type == "GrantsUnconfirmed"
    else:
        raise AssertionError("a leader that never answered confirmed the grants")
    assert time.monotonic() - began < 1.2 + 0.3  # half the heartbeat timeout, and a little
