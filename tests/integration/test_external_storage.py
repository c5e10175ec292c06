"""Temporal's External Storage over xsky's store (activities/storage/payloads.py): a plan and a
replan over Temporal's 2 MiB payload limit, sent by xsky's client, reach the leader; the
history holds small references and the store their bytes, under the run's folder; the run
completes and its history replays through the store."""

from __future__ import annotations

import uuid

import pytest
from temporalio.api.enums.v1 import EventType

from client import XSky
from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.helpers import ask, noop, plan, wait_requests
from tests.integration.histories import events, external_payloads, replayer
from xsky.artifacts import safe_component
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput, RunOptions
from xsky.storage import ObjectStore

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
BIG = int(2.2 * MIB)


def big_noop(agent_id: str, fill: str, depends: str = "") -> str:
    """A no-op whose task is 2.2 MiB of text: its plan is over Temporal's 2 MiB limit for a
    payload (two of them stay under the plan's own 5 MiB limit)."""
    return noop(agent_id, depends=depends).replace(
        f"<task>step {agent_id}</task>", f"<task>step {agent_id} {fill * BIG}</task>"
    )


async def test_a_plan_and_a_replan_over_two_mib_go_through_the_store(env: Env):
    from activities.storage.payloads import current_store

    await env.start_worker()
    x = XSky(env.client, env.settings)
    wid = f"xsky-ext-{uuid.uuid4().hex[:8]}"
    wf = parse_workflow(plan(big_noop("1", "a"), ask("2", "go on?", depends="1"), name="ext"))
    run = await x.start(RunInput(workflow=wf, options=RunOptions()), wid)
    env.handles.append(run.handle)
    await wait_requests(run.handle, 1)  # 1 done, 2 waits for an answer

    # a new plan as big, by the client's update: over 2 MiB, refused by Temporal without the store
    new = plan(big_noop("1", "a"), big_noop("3", "b", depends="1"), name="ext")
    said = await run.replan(xml=new)
    assert said.ok and said.plan_version == 2, said
    result = await run_outcome(run.handle)
    assert result.status == "completed", result
    assert {a.id: a.result for a in result.agents if a.status == "completed"} == {
        "1": "r1",
        "3": "r3",
    }
    history = await run.handle.fetch_history()
    started = events(history, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)[0]
    first = started.workflow_execution_started_event_attributes.input.payloads[0]
    assert len(first.external_payloads) == 1 and first.ByteSize() < 1024
    assert first.external_payloads[0].size_bytes > BIG
    assert external_payloads(history) >= 2  # the start and the replan

    store: ObjectStore = current_store()
    kept = store.keys(f"{safe_component(wid)}/_payloads/")
    assert len(kept) >= 2 and all(len(store.get(k)) > BIG for k in kept), kept
    await replayer().replay_workflow(history)  # reads them back from the store
