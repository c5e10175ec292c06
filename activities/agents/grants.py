"""An attempt's grants, confirmed by the leader that scheduled it before anything honours them.

The approvals, "allow for this run" rules, opened hosts and approved plan role in an agent's
input widen what it may do; anyone able to schedule an activity on this worker's queue could
write them. So an input that carries any is checked with its leader: the execution Temporal
names in the activity's info (set by the server, not by the input) must be a ``LeaderWorkflow``
on this deployment's leader queue, and its ``grants`` query says what it gave this dispatch.
Only that is kept (xsky/leader/grants.py); each thing dropped is a refusal in the attempt's
permission log. An input that carries nothing costs nothing: no query is made.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from xsky.config import Settings
from xsky.leader.grants import Grants, GrantsRequest, claimed, confirmed, stripped
from xsky.plan.agent_config import tool_name
from xsky.runs import AgentInput, DecisionRecord

log = logging.getLogger("xsky.security.permissions")

LEADER = "LeaderWorkflow"
# Direct tools that make no tool call a grant could allow.
NO_CALLS = frozenset({"noop"})
_KEPT_QUEUES = 1024  # executions whose task queue is remembered (one describe each)
# How long an attempt asks its leader to confirm its grants before it gives up (and is tried
# again): each question gives up under the sticky wait (Settings.query_timeout), so a busy
# leader is asked again, not waited on past it.
CONFIRM_PATIENCE = 30.0


class GrantChecks:
    """This worker's checks of grants with the leaders that gave them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._queues: dict[str, str] = {}  # workflow run id → its task queue

    async def confirm(self, inp: AgentInput) -> tuple[AgentInput, list[DecisionRecord]]:
        """``inp`` with only the grants its leader confirms, and the refusals of the others."""
        kept, refused = await self._confirmed(inp)
        return kept, _refusals(inp.task_id, refused)

    async def _confirmed(self, inp: AgentInput) -> tuple[AgentInput, list[str]]:
        """``inp`` with only the grants its leader confirms, and why each other one is dropped."""
        if not claimed(inp):
            return inp, []
        if tool_name(inp.agent.config) in NO_CALLS:
            return stripped(inp), []
        info = activity.info()
        if info.workflow_type != LEADER or not info.workflow_id:
            who = f"a {info.workflow_type} workflow" if info.workflow_type else "no workflow"
            return stripped(inp), [f"the attempt was scheduled by {who}, not by a run's leader"]
        client = activity.client()
        run_id = info.workflow_run_id or None
        queue = await self._queue(client, info.workflow_id, run_id)
        if queue != self.settings.task_queue:
            return stripped(inp), [
                f"the leader that scheduled the attempt runs on task queue {queue!r}, not this "
                f"deployment's ({self.settings.task_queue!r})"
            ]
        handle = client.get_workflow_handle(info.workflow_id, run_id=run_id)
        # (asked before the attempt heartbeats: past half its heartbeat timeout the server
        # would take it for lost — it is tried again, sooner)
        beat = info.heartbeat_timeout.total_seconds() / 2 if info.heartbeat_timeout else None
        patience = time.monotonic() + min(CONFIRM_PATIENCE, beat or CONFIRM_PATIENCE)
        while True:
            # (no question outlasts the patience: each waits at most what is left of it — a
            # last one asked just before it ran out could wait a describe's and a query's
            # deadline more, past the heartbeat timeout)
            left = max(0.1, patience - time.monotonic())
            timeout = min(self.settings.query_timeout, timedelta(seconds=left))
            try:
                grants = await handle.query(
                    "grants",
                    GrantsRequest(task_id=inp.task_id, dispatch=inp.dispatch),
                    result_type=Grants,
                    rpc_timeout=timeout,
                )
                return confirmed(inp, grants)
            except (WorkflowQueryFailedError, RPCError) as e:
                if isinstance(e, RPCError) and time.monotonic() < patience:
                    # its leader's worker is busy or restarting
                    await asyncio.sleep(min(0.5, max(0.0, patience - time.monotonic())))
                    continue
                # Not confirmed: the attempt is tried again (never honour unconfirmed).
                raise ApplicationError(
                    f"the run's leader could not confirm the approvals this attempt carries "
                    f"({e}); the attempt is tried again",
                    type="GrantsUnconfirmed",
                ) from None

    async def _queue(self, client: Client, workflow_id: str, run_id: str | None) -> str:
        key = run_id or workflow_id
        known = self._queues.get(key)
        if known is not None:
            return known
        try:
            described = await client.get_workflow_handle(workflow_id, run_id=run_id).describe(
                rpc_timeout=self.settings.query_timeout
            )
        except RPCError as e:
            raise ApplicationError(
                f"the run's leader could not be looked up to confirm this attempt's approvals ({e})",
                type="GrantsUnconfirmed",
            ) from None
        if len(self._queues) >= _KEPT_QUEUES:
            self._queues.pop(next(iter(self._queues)))
        self._queues[key] = described.task_queue
        return described.task_queue


def _refusals(task_id: str, reasons: list[str]) -> list[DecisionRecord]:
    """Each dropped grant, as a refusal in the attempt's permission log (and the worker's log)."""
    now = datetime.now(UTC)
    for reason in reasons:
        log.warning("%s: refused a grant in its input: %s", task_id, reason)
    return [
        DecisionRecord(
            at=now,
            tool="grant",
            arguments=task_id,
            effect="deny",
            reason=f"refused: {reason} (a worker honours only what the run's leader gave)",
        )
        for reason in reasons
    ]
