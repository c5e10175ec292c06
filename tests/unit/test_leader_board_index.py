"""TaskBoard.index, written as one pass for a 30,000-agent run's continued first task
(bench/continued_task.py), builds the indexes the per-agent version built: the same tasks,
agents, order, dependents, unfinished-dependency counts, status counts — and the same ready
heap, pushed in the same order, so that the run dispatches exactly as it did (its commands
are the same for the same history: no patch)."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from xsky.leader.board import TaskBoard
from xsky.leader.commands import SATISFIED
from xsky.leader.state import BoardState
from xsky.leader.tasks import TaskState
from xsky.plan.models import Workflow, WorkflowAgent

STORED = ["pending", "dispatched", "in_progress", "completed", "failed", "cancelled", "skipped"]


def index_per_agent(board: TaskBoard, plan: Workflow) -> None:
    """TaskBoard.index as it was until v0.12.5: a lookup per dependency, consider per agent."""
    board.tasks = {t.agent_id: t for t in board.state.tasks}
    board.agents = {a.id: a for a in plan.agents}
    board._order = {a.id: i for i, a in enumerate(plan.agents)}
    board._dependents = {a.id: [] for a in plan.agents}
    for a in plan.agents:
        for d in a.depends:
            if d in board._dependents:
                board._dependents[d].append(a.id)
    board._missing = {}
    for a in plan.agents:
        missing = 0
        for d in a.depends:
            task = board.tasks.get(d)
            if task is not None and task.stored not in SATISFIED:
                missing += 1
        board._missing[a.id] = missing
    board._heap = []
    for a in plan.agents:
        board.consider(a.id)
    board.counts = {}
    for t in board.state.tasks:
        board.counts[t.stored] = board.counts.get(t.stored, 0) + 1


def task(agent_id: str, stored: str, waiting: bool, held: bool) -> TaskState:
    return TaskState(
        id=f"T-{agent_id}",
        agent_id=agent_id,
        session_id="run-1",
        subject=agent_id,
        description="",
        assigned_agent="worker",
        stored=stored,  # type: ignore[arg-type]
        waiting_on="Q-1" if waiting else None,
        held=held,
    )


@st.composite
def boards(draw: st.DrawFn) -> tuple[list[TaskState], Workflow, dict[str, int]]:
    n = draw(st.integers(0, 14))
    ids = [str(i) for i in range(1, n + 1)]
    # a plan may hold an id twice (as the unchecked plan of a replan might): model_construct
    plan_ids = ids + draw(st.lists(st.sampled_from(ids), max_size=2)) if ids else []
    names = ids + ["gone", "9999"]  # dependencies on agents no longer (or never) in the plan
    agents = [
        WorkflowAgent.model_construct(
            id=a,
            name="worker",
            task="t",
            depends=draw(st.lists(st.sampled_from(names), max_size=4)),
        )
        for a in plan_ids
    ]
    plan = Workflow.model_construct(name="p", task_id="p", agents=agents)
    # tasks: for some agents none, some twice, and some of agents the plan no longer has
    kept = draw(st.lists(st.sampled_from(names), max_size=n + 4)) if names else []
    tasks = [
        task(a, draw(st.sampled_from(STORED)), draw(st.booleans()), draw(st.booleans()))
        for a in kept
    ]
    active = {a: 1 for a in draw(st.lists(st.sampled_from(names), max_size=3))}
    return tasks, plan, active


def indexes(board: TaskBoard) -> tuple[object, ...]:
    return (
        board.tasks,
        board.agents,
        board._order,
        board._dependents,
        board._missing,
        board._heap,
        board.counts,
        board.ready_ids(),
    )


@settings(max_examples=400, deadline=None)
@given(boards())
def test_one_pass_index_is_the_per_agent_index(
    case: tuple[list[TaskState], Workflow, dict[str, int]],
) -> None:
    tasks, plan, active = case
    one_pass = TaskBoard(BoardState(tasks=list(tasks)), plan)
    one_pass.active = dict(active)
    one_pass.index(plan)  # (again, with attempts in flight: as after a replan)
    per_agent = TaskBoard(BoardState(tasks=list(tasks)), plan)
    per_agent.active = dict(active)
    index_per_agent(per_agent, plan)
    assert one_pass._heap == per_agent._heap  # the same list: the same pushes, in order
    assert indexes(one_pass) == indexes(per_agent)
    # and the heap stays a heap as the run goes on
    while one_pass._heap:
        assert heapq.heappop(one_pass._heap) == heapq.heappop(per_agent._heap)
