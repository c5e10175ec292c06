"""An attempt whose leader is slow to confirm its grants asks again, each question giving up
under the sticky wait (activities/agents/grants.py CONFIRM_PATIENCE, Settings.query_timeout):
one long question could outwait it (docs/deployment.md: "Queries while a run is taken
over"), and one short question failed the attempt as soon as the leader was busy.

A real dev server; the "leader" is a stand-in workflow of the leader's type name that answers
the ``grants`` query, whose worker starts only after the attempt's first questions went
unanswered — as a leader's worker that restarts."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from datetime import timedelta

import pytest
from temporalio import workflow
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.agents.grants import GrantChecks
from tests.unit.test_grants import APPROVAL, carrying
from xsky.config import load_settings
from xsky.leader.grants import Grants, GrantsRequest


@workflow.defn(name="LeaderWorkflow")
class StandIn:
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.query(name="grants")
    def grants(self, request: GrantsRequest) -> Grants:
        return Grants(approvals=[APPROVAL])


def environment(client, queue: str, workflow_id: str, run_id: str) -> ActivityEnvironment:
    env = ActivityEnvironment(client=client)
    env.info = dataclasses.replace(
        env.info,
        workflow_type="LeaderWorkflow",
        workflow_id=workflow_id,
        workflow_run_id=run_id,
        task_queue=f"{queue}-shell",
    )
    return env


async def test_a_busy_leader_is_asked_again_until_it_confirms(client):
    queue = f"grants-{uuid.uuid4().hex[:6]}"
    settings = load_settings({"XSKY_TASK_QUEUE": queue, "XSKY_STICKY_TIMEOUT": "2"})
    assert settings.query_timeout.total_seconds() == 1.0
    handle = await client.start_workflow(
        StandIn.run, id=f"run-{uuid.uuid4().hex[:6]}", task_queue=queue
    )
    env = environment(client, queue, handle.id, handle.result_run_id or "")
    checks = GrantChecks(settings)
    inp = carrying(approvals=[APPROVAL])

    confirmed = asyncio.Event()

    async def leader_back_later() -> None:
        await asyncio.sleep(2.5)  # two or three questions go unanswered meanwhile
        async with Worker(
            client,
            task_queue=queue,
            workflows=[StandIn],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            await confirmed.wait()

    back = asyncio.create_task(leader_back_later())
    try:
        kept, refused = await env.run(checks.confirm, inp)
        assert kept.approvals == [APPROVAL] and refused == []
        confirmed.set()
        # No leader at all within the patience — half the attempt's heartbeat timeout, as it
        # asks before it heartbeats: the attempt is tried again (never honoured).
        gone = GrantChecks(load_settings({"XSKY_TASK_QUEUE": queue, "XSKY_STICKY_TIMEOUT": "2"}))
        await back
        env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=3))
        began = time.monotonic()
        with pytest.raises(ApplicationError) as unconfirmed:
            await env.run(gone.confirm, inp)
        assert time.monotonic() - began < 1.5 + 2 * 1.0 + 1  # (each question up to 1 s)
        assert unconfirmed.value.type == "GrantsUnconfirmed"
        assert not unconfirmed.value.non_retryable
    finally:
        back.cancel()
        await handle.terminate()
