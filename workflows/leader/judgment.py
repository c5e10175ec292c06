"""The leader's consultations of its coordinator: the ``coordinate`` activity, whose answer
is recorded in history and applied by the core (xsky/leader/coordinator/).

Workflow code (deterministic): called only from :class:`workflows.leader.LeaderWorkflow`
and its attempts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

from workflows.failures import describe_failure

with workflow.unsafe.imports_passed_through():
    from xsky.leader.coordinator.judgment import consult_key
    from xsky.leader.core import Command, Consult, LeaderCore
    from xsky.leader.ledger import ConsultInput, ConsultOutcome
    from xsky.plan.budget import Usage
    from xsky.safe_text import printable

# What people read in the Web UI for each point.
_WHAT = {
    "result": "check {task}'s result",
    "goal": "check the goal",
    "stall": "root cause of {task}'s stall",
    "question": "answer {task}'s question",
    "approval": "judge {task}'s tool request",
}


async def consult(core: LeaderCore, inp: ConsultInput, queue: str) -> ConsultOutcome | None:
    """The coordinator's answer, or None when it could not be had (its model failed after
    the retries, or its reply could not be read): the leader then takes its mechanical
    course, and says so in the ledger. The consultation's hold on the run's budget (taken by
    the core when it asked: xsky/leader/coordinator/judgment.py) goes when it ends."""
    task = inp.task.task_id if inp.task is not None else "the run"
    key = consult_key(inp)
    try:
        outcome = await workflow.execute_activity(
            "coordinate",
            inp,
            result_type=ConsultOutcome,
            task_queue=queue,
            # No worker of the llm queue took it (a deployment of tool workers only): the
            # leader goes on without the coordinator rather than wait for one.
            schedule_to_start_timeout=timedelta(seconds=60),
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(
                maximum_attempts=3,
                non_retryable_error_types=[
                    "CoordinatorUnreadable",
                    "LLMRequestError",
                    "LLMConfigError",
                ],
            ),
            summary=printable(f"leader · {_WHAT[inp.point].format(task=task)}"),
        )
    except ActivityError as e:
        workflow.logger.warning(
            "the coordinator could not be consulted (%s): %s", inp.point, describe_failure(e)
        )
        settle_failed(core, key, "leader", e)
        return None
    except asyncio.CancelledError:
        core.budget.leader_call_lost(key, "leader")  # stopped mid-call: what it spent is not known
        raise
    core.budget.leader_call_ended(key, "leader")  # its usage is settled with its answer
    return outcome


def settle_failed(core: LeaderCore, key: str, source: str, e: ActivityError) -> None:
    """A leader call that failed: charged what its error (or its last heartbeat) says it used,
    else its whole share."""
    used = failed_usage(e)
    if used is None:
        core.budget.leader_call_lost(key, source)
    else:
        core.budget.leader_call_ended(key, source, used)


def failed_usage(e: ActivityError) -> Usage | None:
    """What a failed leader call said it used: in its error's details, or in the last
    heartbeat of an attempt that timed out (None: it did not say)."""
    cause = e.cause
    details: Sequence[Any] = ()
    if isinstance(cause, ApplicationError):
        details = cause.details
    elif isinstance(cause, TimeoutError):
        details = cause.last_heartbeat_details
    for d in details:
        if isinstance(d, dict) and isinstance(d.get("usage"), dict):
            return Usage.model_validate(d["usage"])
    return None


async def check_goal(
    core: LeaderCore, board: Any, queue: str, apply: Callable[[list[Command]], None]
) -> bool:
    """Every task is done: ask whether the goal is met, and apply the verdict (a replan, an
    escalation, or nothing more to do). False: there is nothing to ask."""
    goal = core.goal_review(workflow.now())
    if goal is None:
        return False
    board.publish(core)
    judged = await consult(core, goal, queue)
    apply(core.goal_judged(goal.plan_version, judged, workflow.now()))
    board.publish(core)
    return True


async def judge_stall(
    core: LeaderCore, command: Consult, queue: str, apply: Callable[[list[Command]], None]
) -> None:
    """The coordinator looks for a stalled task's root cause; the core acts on it."""
    judged = await consult(core, command.consult, queue)
    apply(core.stall_judged(command.agent_id, judged, workflow.now()))
