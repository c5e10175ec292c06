"""A run's RunResult however it ended (completed, failed, or cancelled as a whole)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.client import (
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from client import leader_calls as calls
from client._consts import OUTCOME_TYPES, QUERY_TIMEOUT
from xsky.errors import NoWorkerError
from xsky.leader.state import PageRequest
from xsky.runs import AgentReport, RunResult

# -- outcomes ------------------------------------------------------------------------------------


def result_of(error: BaseException) -> RunResult | None:
    """The RunResult a failed run carries in its failure, if it is one of ours."""
    cause = error.cause if isinstance(error, WorkflowFailureError) else error
    if isinstance(cause, ApplicationError) and cause.type in OUTCOME_TYPES and cause.details:
        return RunResult.model_validate(cause.details[0])
    return None


async def run_outcome(handle: WorkflowHandle[Any, RunResult]) -> RunResult:
    """Wait for the run; its RunResult whether it completed or its agents failed (a failed
    run's Temporal status is Failed, and its failure carries the result)."""
    try:
        return await handle.result()
    except WorkflowFailureError as e:
        result = result_of(e)
        if result is None:
            raise
        return result


async def cancelled_result(
    handle: WorkflowHandle[Any, RunResult], timeout: timedelta = QUERY_TIMEOUT
) -> RunResult:
    """A run cancelled as a whole ends Cancelled in Temporal, with no return value: its
    RunResult is put together from the run's ``results`` query (every agent's report)."""

    agents: list[AgentReport] = []
    while True:
        try:
            page = await handle.query(
                calls.RESULTS.name,
                PageRequest(offset=len(agents), limit=2000),
                result_type=calls.RESULTS.answer,
                rpc_timeout=timeout,
            )
        except RPCError as e:
            raise NoWorkerError(
                f"{handle.id} was cancelled; reading its agents' results needs a worker ({e.message})",
                "start one with `python worker.py`",
                topic="worker",
            ) from None
        agents += page.agents
        if not page.agents or len(agents) >= page.total:
            break
    counts: dict[str, int] = {}
    for a in agents:
        counts[a.status] = counts.get(a.status, 0) + 1
    done = counts.get("completed", 0) + counts.get("skipped", 0)
    desc = await handle.describe()
    attrs = {key.name: value for key, value in desc.typed_search_attributes}
    return RunResult(
        workflow_id=handle.id,
        name=str(attrs.get("XskyPlan") or await desc.static_summary() or handle.id),
        status="cancelled",
        summary=f"cancelled: {done} of {len(agents)} agents completed",
        agents=agents,
        counts=counts,
        agents_total=len(agents),
        started_at=desc.start_time,
        ended_at=desc.close_time,
    )
