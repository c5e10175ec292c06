"""The engine's own share of a run does not grow with the plan: what the leader records beside
its agents' activities (markers, search attributes, timers, its own activities) is the same
for a plan of 4 agents and of 24, and each agent is three events (scheduled, started,
completed) — a per-agent marker, local activity, timer or upsert added by a feature fails
here before it shows in bench/overhead.py."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from temporalio.api.enums.v1 import EventType

from client.outcome import run_outcome
from tests.conftest import Env

pytestmark = pytest.mark.integration

ACTIVITY = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
}
# Their number follows when the agents' results arrive (several in one task, or one each),
# which is the server's timing, not the leader's choice; so do a loaded machine's timed-out
# or failed tasks (a sticky queue's wait).
WORKFLOW_TASK = {
    value for name, value in EventType.items() if name.startswith("EVENT_TYPE_WORKFLOW_TASK_")
}


def fan_out(n: int) -> str:
    """One agent, ``n - 2`` that depend on it, one that depends on them all: no-ops."""

    def agent(agent_id: str, depends: list[str]) -> str:
        after = f' depends="{",".join(depends)}"' if depends else ""
        return (
            f'<agent name="llm" id="{agent_id}"{after}><task>no-op {agent_id}</task>'
            '<config>{"tool": "noop"}</config></agent>'
        )

    middle = [f"m{i}" for i in range(n - 2)]
    agents = [agent("root", []), *(agent(m, ["root"]) for m in middle), agent("sink", middle)]
    return f'<workflow name="fan-out {n}" taskId="cost-{n}">{"".join(agents)}</workflow>'


async def test_the_leaders_own_events_are_the_same_for_4_agents_and_for_24(env: Env):
    await env.start_worker()
    own: dict[int, Counter[str]] = {}
    for n in (4, 24):
        handle = await env.start(fan_out(n))
        outcome = await asyncio.wait_for(run_outcome(handle), 90)
        assert outcome.status == "completed", outcome.summary
        events = list((await handle.fetch_history()).events)
        agents = [
            e
            for e in events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and e.activity_task_scheduled_event_attributes.activity_type.name == "run_agent"
        ]
        assert len(agents) == n  # each agent once: no retry, no second dispatch
        kinds: Counter[str] = Counter()
        for e in events:
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                name = e.activity_task_scheduled_event_attributes.activity_type.name
                if name != "run_agent":
                    kinds[f"activity {name}"] += 1  # the leader's own
            elif e.event_type not in ACTIVITY | WORKFLOW_TASK:
                kinds[EventType.Name(e.event_type)] += 1
        activity_events = sum(1 for e in events if e.event_type in ACTIVITY)
        leaders = sum(n for k, n in kinds.items() if k.startswith("activity "))
        assert activity_events == 3 * (n + leaders)  # three events an activity, none more
        own[n] = kinds
    assert own[4] == own[24], (own[4], own[24])
