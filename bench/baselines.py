"""Baselines the benchmarks compare xsky against, running the same activity.

* ``MinimalDagWorkflow`` — the least a hand-written Temporal workflow must do: start each
  node's activity once its dependencies' activities are done. No board, no queries.
* ``BareDagWorkflow`` — Temporal's DSL sample's shape: a string in, ``"ok"`` out, activities
  on the workflow's own queue (handed back eagerly with the workflow task). The floor.
* ``LevelByLevelWorkflow`` — the seed's executor shape: run a whole level, wait for all of
  it, then the next level (Eko's tree of `normal`/`parallel` nodes).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from xsky.plan.dag import levels
    from xsky.plan.models import Workflow
    from xsky.runs import AgentInput, AgentOutcome

_OPTS = dict(
    start_to_close_timeout=timedelta(minutes=5),
    heartbeat_timeout=timedelta(seconds=60),
    result_type=AgentOutcome,
)


def _input(wf: Workflow, agent_id: str) -> AgentInput:
    return AgentInput(
        run_id=workflow.info().workflow_id, task_id=f"T-{agent_id}", agent=wf.agent(agent_id)
    )


@workflow.defn
class MinimalDagWorkflow:
    @workflow.run
    async def run(self, wf: Workflow) -> int:
        queue = f"{workflow.info().task_queue}-llm"
        done: dict[str, asyncio.Task[AgentOutcome]] = {}

        async def node(agent_id: str, deps: list[str]) -> AgentOutcome:
            for d in deps:
                await done[d]
            return await workflow.execute_activity(
                "run_agent", _input(wf, agent_id), task_queue=queue, **_OPTS
            )

        for agent in wf.agents:
            done[agent.id] = asyncio.create_task(node(agent.id, agent.depends))
        await asyncio.gather(*done.values())
        return len(done)


@workflow.defn
class LevelByLevelWorkflow:
    @workflow.run
    async def run(self, wf: Workflow) -> int:
        queue = f"{workflow.info().task_queue}-llm"
        for level in levels(wf):
            await asyncio.gather(
                *(
                    workflow.execute_activity("run_agent", _input(wf, a), task_queue=queue, **_OPTS)
                    for a in level
                )
            )
        return len(wf.agents)


@activity.defn(name="bare_step")
async def bare_step(name: str) -> str:
    return "ok"


@workflow.defn
class BareDagWorkflow:
    @workflow.run
    async def run(self, wf: Workflow) -> int:
        done: dict[str, asyncio.Task[str]] = {}

        async def node(agent_id: str, deps: list[str]) -> str:
            for d in deps:
                await done[d]
            return await workflow.execute_activity(
                "bare_step", agent_id, start_to_close_timeout=timedelta(minutes=1), result_type=str
            )

        for agent in wf.agents:
            done[agent.id] = asyncio.create_task(node(agent.id, agent.depends))
        await asyncio.gather(*done.values())
        return len(done)


@workflow.defn
class BareLocalChainWorkflow:
    """A chain of ``n`` steps as *local* activities (``bare_step``, in the worker's own
    process, no server round trip per step): the floor a local fast path would run at, which
    issue 37 asks a chain of instant agents to stay within 3× of."""

    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await workflow.execute_local_activity(
                "bare_step", str(i), start_to_close_timeout=timedelta(minutes=1), result_type=str
            )
        return n


@workflow.defn
class BareAgentDagWorkflow:
    """The bare shape (activities on the workflow's own queue, handed back eagerly) calling
    xsky's ``run_agent`` with an ``AgentInput``: what the leader's worker does for each agent,
    without the leader (bench/workflow_causes.py)."""

    @workflow.run
    async def run(self, wf: Workflow) -> int:
        done: dict[str, asyncio.Task[AgentOutcome]] = {}

        async def node(agent_id: str, deps: list[str]) -> AgentOutcome:
            for d in deps:
                await done[d]
            return await workflow.execute_activity("run_agent", _input(wf, agent_id), **_OPTS)

        for agent in wf.agents:
            done[agent.id] = asyncio.create_task(node(agent.id, agent.depends))
        await asyncio.gather(*done.values())
        return len(done)


@activity.defn(name="run_agent")
async def instant_run_agent(inp: AgentInput) -> AgentOutcome:
    """A ``run_agent`` that does nothing: the leader's own share, without the activity's."""
    return AgentOutcome(kind="completed", result="ok", attempt=activity.info().attempt)
