"""An automatic replan that hands shell, Python or network tools to new agents waits for a
person's approve_plan — and, like a first plan's review, for review_timeout seconds at most
(then review_timeout_action applies). Exact, on the pure core with a simulated clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from xsky.leader.core import CallPlanner, LeaderCore, StartAgent, StopAgent
from xsky.leader.state import ApprovePlanRequest
from xsky.plan.models import RoleCapabilityModel, Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RequestPayload, RunInput, RunOptions
from xsky.security.roles import BUILTIN_ROLES

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def core_after_privileged_replan(action: str, timed: bool = True) -> tuple[LeaderCore, list[str]]:
    """A run whose agent 1 failed; the planner answered with a new shell agent 3."""
    plan = Workflow(
        name="p",
        task_id="p",
        agents=[
            WorkflowAgent(id="1", name="llm", task="first"),
            WorkflowAgent(id="2", name="llm", task="slow", depends=[]),
        ],
    )
    options = RunOptions(max_parallel=2, review_timeout=30, review_timeout_action=action)  # type: ignore[arg-type]
    core = LeaderCore(RunInput(workflow=plan, options=options), "run-1", T0)
    starts = core.dispatch(T0)
    assert [c.agent_id for c in starts if isinstance(c, StartAgent)] == ["1", "2"]
    commands = core.attempt_failed("1", core.tasks["1"], 1, None, T0)  # cancelled: no failure
    core.attempt_ended("1", 1)
    commands = core.auto_replan("T-1 failed", force=True)
    assert commands == [CallPlanner("T-1 failed")]
    new = plan.model_copy(
        update={
            "agents": [
                *plan.agents,
                WorkflowAgent(
                    id="3",
                    name="shell",
                    task="fix it",
                    config={"tool": "shell", "command": "echo fix"},
                ),
            ]
        }
    )
    wf = core.checks.plan(new)
    risky = core.cast.privileged_changes(wf, core.board.agents)
    core.apply_plan(wf, core.plans.auto_label("T-1 failed"), T0)
    core.plans.require_review(risky, T0, timed)
    core.planner_finished()
    return core, risky


def test_the_new_shell_agent_does_not_start_before_approve_plan():
    core, risky = core_after_privileged_replan("cancel")
    assert risky == ["3"]
    assert core.state.plan.review == "waiting"
    assert core.dispatch(T0 + timedelta(seconds=5)) == []
    assert [r.id for r in core.pending_requests(with_review=True)] == [
        f"R-{core.state.plan.version}"
    ]
    core.people.approve_plan(
        ApprovePlanRequest(version=core.state.plan.version), T0 + timedelta(seconds=6)
    )
    started = [c.agent_id for c in core.dispatch(T0 + timedelta(seconds=6))]
    assert "3" in started


def test_the_review_times_out_as_a_first_plans_review_does_cancel():
    core, _ = core_after_privileged_replan("cancel")
    assert core.next_deadline(T0) == T0 + timedelta(seconds=30)
    assert core.tick(T0 + timedelta(seconds=29)) == []
    assert core.state.plan.review == "waiting"
    stops = core.tick(T0 + timedelta(seconds=30))
    assert stops == [StopAgent("2")]  # the attempt still running is stopped
    assert core.ended and "nobody approved the plan within 30s" in core.ended
    assert core.tasks["3"].stored == "cancelled" and core.dispatch(T0 + timedelta(seconds=31)) == []
    core.attempt_failed("2", core.tasks["2"], 1, None, T0 + timedelta(seconds=31))
    core.attempt_ended("2", 1)
    assert core.finished() and core.views.result(T0 + timedelta(seconds=31)).status == "cancelled"


def test_the_review_times_out_as_a_first_plans_review_does_approve():
    core, _ = core_after_privileged_replan("approve")
    assert core.tick(T0 + timedelta(seconds=30)) == []
    assert core.state.plan.review == "approved_by_timeout"
    # one slot beside the running agent 2: the shell agent, approved by the timeout
    assert [c.agent_id for c in core.dispatch(T0 + timedelta(seconds=30))] == ["3"]
    outcome = AgentOutcome(kind="completed", result="done")
    core.attempt_succeeded("2", core.tasks["2"], 1, outcome, T0 + timedelta(seconds=31))
    assert core.state.plan.history[-1].reason.startswith("approved automatically")


@pytest.mark.parametrize("action", ["cancel", "approve"])
def test_runs_recorded_before_the_patch_keep_waiting(action: str):
    """Without the patch (histories of v0.2.0) the review has no deadline: no timer is armed,
    nothing happens with time, exactly as those runs recorded it."""
    core, _ = core_after_privileged_replan(action, timed=False)
    assert core.state.plan.review_deadline is None
    assert core.next_deadline(T0) is not None  # agent 2's stall ladder, not the review
    assert core.next_deadline(T0) != T0 + timedelta(seconds=30)
    core.tick(T0 + timedelta(days=2))
    assert core.state.plan.review == "waiting" and not core.ended


def test_a_review_that_times_out_withdraws_what_waited_for_a_person_and_waits_for_the_planner():
    """Cancelled by the timeout, the run asks nobody anything any more (XskyPending falls to
    0), and it ends only once a planner call still in flight has returned."""
    core, _ = core_after_privileged_replan("cancel")
    outcome = AgentOutcome(kind="question", request=RequestPayload(question="which?"))
    core.attempt_succeeded("2", core.tasks["2"], 1, outcome, T0 + timedelta(seconds=1))
    core.attempt_ended("2", 1)
    assert [r.kind for r in core.pending_requests()] == ["question"]
    core.planner_started()  # say a second automatic replan is still at work
    core.tick(T0 + timedelta(seconds=30))
    assert core.pending_requests() == [] and core.views.search_values()["XskyPending"] == 0
    assert core.tasks["2"].stored == "cancelled" and core.tasks["2"].waiting_on is None
    assert not core.finished(), "the run closed with the planner still at work"
    core.planner_finished()
    assert core.finished()


def test_a_replan_handing_out_mcp_tools_is_privileged_under_its_patch():
    """A new agent of a role with an MCP server's tools, or a direct MCP call: privileged with
    the patch mcp-tools-privileged (a history without its marker replays the old answer)."""
    plan = Workflow(name="p", task_id="p", agents=[WorkflowAgent(id="1", name="llm", task="t")])
    roles = {
        **BUILTIN_ROLES,
        "gh": RoleCapabilityModel(name="gh", allowed_tools=["mcp__github"]),
    }
    core = LeaderCore(RunInput(workflow=plan, roles=roles), "run-1", T0)
    new = plan.model_copy(
        update={
            "agents": [
                *plan.agents,
                WorkflowAgent(id="2", name="gh", task="open an issue"),
                WorkflowAgent(id="3", name="llm", task="x", config={"tool": "mcp__fs__read_file"}),
                WorkflowAgent(id="4", name="llm", task="y"),
            ]
        }
    )
    wf = core.checks.plan(new)
    assert core.cast.privileged_changes(wf, core.board.agents, mcp=True) == ["2", "3"]
    assert core.cast.privileged_changes(wf, core.board.agents) == []
