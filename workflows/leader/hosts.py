"""Where a run's workspace lives when workers share no disk: one host at a time.

With an object store instead of a shared disk (leader_setup's ``workspace_hosts``), the agents
that work in the run's workspace (files, commands, MCP servers) run on one host: its own task
queue, ``<queue>-host-<host>`` — Temporal's worker-specific task queue. The first such agent
claims a host: a ``claim_workspace`` activity on the agent's kind's queue, taken by whichever
worker polls first, answers with its host; the answer is recorded in history, so a replay sends
every agent where it went. Each agent there snapshots the workspace to the store when it ends.
The claim is the workspace's, not the run's: runs that name the same workspace (and follow-up
runs) are answered with the host that holds it while that host is alive (claims.py).

When the host is lost, an agent scheduled on its queue is not taken within its
schedule-to-start timeout (twice the heartbeat timeout); ``host_alive`` then asks the server
whether any worker of that queue has sent a heartbeat lately. None has: the workspace is
claimed again (another host, which restores the snapshot before its first agent) and the agent
is sent there. One has: the host is only busy, and the agent waits on its queue again.
Agents that need no workspace (llm, browser, http) run on their kind's queue, anywhere.
Workflow code (deterministic).
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TimeoutError, TimeoutType

from workflows.leader import io as leader_io

with workflow.unsafe.imports_passed_through():
    from xsky.leader.core import LeaderCore
    from xsky.runs import AgentInput, AgentOutcome, HostCheck, WorkspaceClaim, WorkspaceHost

# Hosts lost one after another under one attempt before it fails (a busy host is waited for).
MAX_MOVES = 20
# Seconds without a worker heartbeat after which a host counts as lost (workers beat every 3 s).
SILENT = 10.0
HOST_ACTIVITY: dict[str, Any] = {
    "start_to_close_timeout": timedelta(seconds=30),
    "retry_policy": RetryPolicy(maximum_attempts=3),
}


class Hosts:
    """The run's workspace host: claimed once, claimed again when lost."""

    def __init__(self) -> None:
        self._claim: asyncio.Task[str] | None = None

    async def queue(
        self, core: LeaderCore, task_id: str, kind_queue: str, agent_input: AgentInput
    ) -> str:
        """The queue of the host holding the workspace; claimed on ``kind_queue`` the first time
        (agents ready together wait for the one claim)."""
        if core.workspace_queue is not None:
            return core.workspace_queue
        if self._claim is None or self._claim.done():
            self._claim = asyncio.create_task(self._claimed(core, task_id, kind_queue, agent_input))
        return await asyncio.shield(self._claim)

    async def _claimed(
        self, core: LeaderCore, task_id: str, kind_queue: str, agent_input: AgentInput
    ) -> str:
        # The workspace, not only the run: the host that holds it for another run (the same
        # name, the first run of a follow-up chain) is answered while it is alive.
        host = await workflow.execute_activity(
            "claim_workspace",
            WorkspaceClaim(
                run_id=core.run_id,
                task_id=task_id,
                lost=core.lost_queue,
                workspace=agent_input.workspace,
                workspace_of=agent_input.workspace_of,
                window=SILENT,
            ),
            result_type=WorkspaceHost,
            task_queue=kind_queue,
            **HOST_ACTIVITY,
            summary=f"a host for the workspace ({task_id})",
        )
        core.host_claimed(host.queue)
        return host.queue

    async def _lost(self, core: LeaderCore, queue: str) -> bool:
        """Is the host of ``queue`` gone (then the next agent claims another)?"""
        if core.workspace_queue != queue:
            return True  # another agent found it lost already
        alive = await workflow.execute_activity(
            "host_alive",
            HostCheck(queue=queue, window=SILENT),
            result_type=bool,
            task_queue=workflow.info().task_queue,
            **HOST_ACTIVITY,
            summary=f"is {queue} still served?",
        )
        if not alive and core.workspace_queue == queue:
            workflow.logger.warning("run %s: the workspace's host (%s) is lost", core.run_id, queue)
            core.host_lost(queue)
        return not alive

    async def run(
        self,
        core: LeaderCore,
        agent_id: str,
        dispatch: int,
        agent_input: AgentInput,
        settings: Any,
        kind_queue: str,
    ) -> AgentOutcome:
        """One attempt of a workspace agent on the workspace's host, sent again while that host
        does not take it (to another host once it is found lost)."""
        task_id = core.tasks[agent_id].id
        moves = 0
        for reroute in itertools.count():
            queue = await self.queue(core, task_id, kind_queue, agent_input)
            try:
                return await leader_io.run_attempt(
                    core,
                    agent_id,
                    dispatch,
                    agent_input,
                    settings,
                    queue,
                    False,
                    routed={
                        "schedule_to_start_timeout": timedelta(seconds=2 * settings.heartbeat),
                        **(
                            {
                                "activity_id": f"{task_id}-v{core.plans.version}-d{dispatch}-r{reroute}"
                            }
                            if reroute
                            else {}
                        ),
                    },
                )
            except ActivityError as e:
                if not _not_taken(e):
                    raise
                # A busy host (all its slots taken by this run's other agents) is waited for as
                # long as it takes; only hosts lost one after another fail the agent.
                if await self._lost(core, queue):
                    moves += 1
                    if moves > MAX_MOVES:
                        raise
        raise AssertionError("unreachable")


def _not_taken(e: ActivityError) -> bool:
    """No worker took the attempt within its schedule-to-start timeout."""
    cause = e.cause
    return isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START
