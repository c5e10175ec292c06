"""How a run begins: its first state, and — for a follow-up run (``retry`` after a run ended,
``Run.retry``) — what it carries over: what completed in the run it resumes stays completed,
with its result; the agents to run again, and every agent that depends on them, start afresh."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from xsky.leader.board import TaskBoard
from xsky.leader.commands import SATISFIED
from xsky.leader.plans import PlanBook
from xsky.leader.replan import new_task
from xsky.leader.state import BoardState, BudgetState, LeaderState, PlanState, PlanVersion, RunFacts
from xsky.plan import dag, loops
from xsky.plan.budget import with_plan
from xsky.plan.models import Workflow
from xsky.plan.xml import workflow_to_xml
from xsky.runs import ResumeFrom, RunInput, RunOptions


def next_input(inp: RunInput, plan: Workflow, options: RunOptions, state: LeaderState) -> RunInput:
    """The input of the run's next execution (continue-as-new): the same run, carrying its
    whole state — and, for a follow-up or fork, where it works (its carried reports are in
    the state already, never carried twice)."""
    return RunInput(
        workflow=plan,
        variables=inp.variables,
        context=inp.context,
        options=options,
        roles=inp.roles,
        permissions=inp.permissions,
        task_prompt=inp.task_prompt,
        resume=inp.resume.model_copy(update={"carried": []}) if inp.resume is not None else None,
        state=state,
    )


def carry(board: TaskBoard, plans: PlanBook, resume: ResumeFrom) -> None:
    """Carry ``resume``'s completed results onto a new run's board; the first plan version says so."""
    plan = plans.plan
    again = dag.with_descendants(plan, resume.rerun)
    reports = {r.id: r for r in resume.carried if r.status in SATISFIED}
    carried = []
    for task in board.state.tasks:
        report = reports.get(task.agent_id)
        if report is None or task.agent_id in again:
            continue
        task.stored = "skipped" if report.status == "skipped" else "completed"
        task.result, task.result_ref = report.result, report.result_ref
        task.provider = report.provider  # an offline answer stays marked as one
        task.artifacts = list(report.artifacts)
        task.started_at, task.ended_at = report.started_at, report.ended_at
        task.last_progress = f"carried from {resume.run_id}"
        carried.append(task.id)
    order = {a.id: i for i, a in enumerate(plan.agents)}
    if plans.state.history:
        rerun = ", ".join("T-" + a for a in sorted(again, key=lambda a: order.get(a, len(order))))
        plans.state.history[0].reason = (
            f"resumes {resume.run_id}: {len(carried)} results carried over; "
            f"{rerun or 'nothing'} run again"
        )
    plans.state.resumes = resume.run_id
    board.index(plan)


def first_state(
    inp: RunInput,
    first: Workflow,
    run_id: str,
    now: datetime,
    patched: Callable[[str], bool] | None = None,
) -> LeaderState:
    """A new run's state: its first plan (none yet for a run started from a sentence: the
    planner makes it), a task per agent, its review and budget as it was started with."""
    planning = inp.workflow is None
    first, durable = loops.lower(first, patched)  # a forEach among an agent's steps: agents
    reason = "; ".join(["initial plan", *durable])
    return LeaderState(
        plan=PlanState(
            plan=first,
            history=[]
            if planning
            else [PlanVersion(version=1, xml=workflow_to_xml(first), reason=reason, at=now)],
            review="waiting" if inp.options.review else "none",
            review_deadline=now + timedelta(seconds=inp.options.review_timeout)
            if inp.options.review
            else None,
        ),
        board=BoardState(
            tasks=[new_task(a, run_id, {**first.variables, **inp.variables}) for a in first.agents]
        ),
        budget=BudgetState(limits=with_plan(inp.options.budget, first.budget)),
        run=RunFacts(started_at=now),
    )
