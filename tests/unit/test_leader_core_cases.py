"""Single cases of LeaderCore beside its state machine (test_leader_core.py): the ready set's cost, what rejections say, a pause that cannot undo a cancel."""

from __future__ import annotations

import pytest

from tests.unit.test_leader_core import (
    T0,
    LeaderMachine,
    ref,
)
from xsky.leader.core import (
    LeaderCore,
    Rejected,
)
from xsky.leader.state import (
    AnswerRequest,
    RetryTaskRequest,
    TaskRequest,
)
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RunInput, RunOptions


def test_the_ready_set_is_plan_order_and_each_completion_costs_only_its_dependents() -> None:
    """A 2,000-wide fan-out: the root's completion makes 2,000 ready in plan order, and the
    core touched only the root's dependents (no board scan)."""
    agents = [WorkflowAgent(id="root", name="llm", task="root")]
    agents += [
        WorkflowAgent(id=f"f{i:04d}", name="llm", task="leaf", depends=["root"])
        for i in range(2000)
    ]
    core = LeaderCore(
        RunInput(
            workflow=Workflow(name="fan", task_id="fan", agents=agents),
            options=RunOptions(max_parallel=1000),
        ),
        "run-1",
        T0,
    )
    (start,) = core.dispatch(T0)
    task = core.tasks["root"]
    core.attempt_succeeded(
        "root", task, start.dispatch, AgentOutcome(result="r", result_ref=ref("root")), T0
    )  # type: ignore[union-attr]
    core.attempt_ended("root", start.dispatch)  # type: ignore[union-attr]
    starts = core.dispatch(T0)
    assert [c.agent_id for c in starts] == [f"f{i:04d}" for i in range(1000)]  # type: ignore[union-attr]
    assert len(core.board.ready_ids()) == 1000


@pytest.mark.parametrize("wrong", ["T-9", "Q-1"])
def test_rejections_say_what_to_do(wrong: str) -> None:
    core = LeaderCore(
        RunInput(
            workflow=Workflow(
                name="w", task_id="w", agents=[WorkflowAgent(id="1", name="llm", task="a")]
            )
        ),
        "run-1",
        T0,
    )
    with pytest.raises(Rejected, match="tasks: T-1|pending requests: none"):
        if wrong.startswith("T-"):
            core.checks.retry(RetryTaskRequest(task_id=wrong))
        else:
            core.checks.answer(AnswerRequest(request_id=wrong, text="x"))


def test_a_pause_cannot_undo_a_cancel_whose_attempt_is_still_stopping() -> None:
    """Stop reasons rank: a person's cancel, then a pause before the attempt acknowledged,
    still ends cancelled (the weaker reason must not replace the stronger)."""
    m = LeaderMachine()
    m.start(
        Workflow(name="m", task_id="m", agents=[WorkflowAgent(id="1", name="llm", task="a")]),
        2,
        0,
        False,
    )
    m.dispatch()
    m.core.checks.cancel(TaskRequest(task_id="T-1"))
    _, stops = m.core.people.cancel(TaskRequest(task_id="T-1"), m.now)
    m.apply(stops)
    m.pause(True)
    task = m.core.tasks["1"]
    m.apply(m.core.attempt_failed("1", task, m.running["1"], None, m.now))
    m.end("1")
    assert task.stored == "cancelled" and m.core.finished()
