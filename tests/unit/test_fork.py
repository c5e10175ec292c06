"""Forks and follow-ups (client/fork.py, client/resume.py): what is carried, and their names."""

from __future__ import annotations

import pytest

from client.fork import carried, edited, fork_id
from client.resume import follow_up_id
from xsky.errors import UsageError
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentReport


def wf(*agents: tuple[str, str, str]) -> Workflow:
    return Workflow(
        name="w",
        task_id="w",
        agents=[
            WorkflowAgent(id=i, name="llm", task=t, depends=[d] if d else []) for i, t, d in agents
        ],
    )


def done(agent_id: str, status: str = "completed") -> AgentReport:
    return AgentReport(
        id=agent_id, task_id=f"T-{agent_id}", name="llm", status=status, result="r", attempts=1
    )


def test_a_fork_keeps_what_its_agent_does_not_lead_to_and_what_a_new_plan_keeps_the_same():
    old = wf(("1", "a", ""), ("2", "b", "1"), ("3", "c", "2"), ("4", "d", "1"))
    reports = [done("1"), done("2"), done("3"), done("4", "failed")]
    assert [r.id for r in carried(old, old, "2", reports)] == ["1"]  # 2 and 3 again; 4 failed
    new = wf(("1", "a", ""), ("2", "b", "1"), ("3", "c", "2"), ("4", "D", "1"))
    assert [r.id for r in carried(old, edited(old, "3", "c2", None), "3", reports)] == ["1", "2"]
    assert [r.id for r in carried(old, new, "3", [*reports[:3], done("4")])] == [
        "1",
        "2",
    ]  # 4 changed
    with pytest.raises(UsageError, match="the new task text is empty"):
        edited(old, "2", " ", None)


def test_follow_ups_and_forks_are_named_for_the_first_run():
    assert follow_up_id("xsky-a-retry-0ac3da-retry-434285").startswith("xsky-a-retry-")
    assert len(follow_up_id("xsky-a-retry-0ac3da-retry-434285")) == len("xsky-a-retry-000000")
    assert fork_id("xsky-a-fork-abcdef-retry-012345").startswith("xsky-a-fork-")


def test_what_a_fork_would_repeat_unasked_is_named_and_what_may_run_again_is_not():
    from datetime import UTC, datetime

    from client.fork import repeated_effects
    from xsky.leader.state import HumanRequest
    from xsky.security.permissions import PermissionSettings

    def agent(i: str, config: dict[str, object] | None, depends: str = "") -> WorkflowAgent:
        return WorkflowAgent(
            id=i, name="shell", task=f"t{i}", config=config, depends=[depends] if depends else []
        )

    new = Workflow(
        name="w",
        task_id="w",
        agents=[
            agent("1", {"tool": "shell", "command": "echo hi"}),
            agent(
                "2", {"tool": "shell", "command": "curl -X POST https://api.example/refund"}, "1"
            ),
            agent("3", {"tool": "shell", "command": "make build"}, "1"),
            agent("4", {"tool": "shell", "command": "echo x", "idempotent": False}, "1"),
            agent("5", None, "1"),  # a model agent: its calls are judged as it makes them
            agent("6", {"tool": "shell", "command": "git push"}, "1"),  # never ran there
        ],
    )
    reports = [done(i) for i in "12345"] + [done("6", "pending")]
    doubt = HumanRequest(
        id="Q-1",
        kind="question",
        task_id="T-5",
        dispatch=1,
        text="may have run",
        created_at=datetime.now(UTC),
        choices=["again", "skip", "done"],
    )
    said = repeated_effects(new, [done("1")], reports, [doubt], PermissionSettings())
    assert [s.split(" ")[0] for s in said] == ["T-2", "T-4", "T-5"]
    assert "HTTP POST" in said[0] or "curl" in said[0]
    assert "in doubt there (Q-1, unanswered)" in said[2]
    # a call cancelled in flight (the run cancelled) may have done its work (a review found
    # it passed unnamed)
    cancelled = done("2", "cancelled")
    assert [
        s.split(" ")[0] for s in repeated_effects(new, [], [cancelled], [], PermissionSettings())
    ] == ["T-2"]
    # carried agents are not run again: nothing to say of them
    assert repeated_effects(new, reports[:5], reports, [], PermissionSettings()) == []


def test_a_direct_tool_whose_task_nothing_reads_is_named_and_the_direct_llm_is_not():
    from client.fork import direct_tool

    wf = Workflow(
        name="w",
        task_id="w",
        agents=[
            WorkflowAgent(
                id="1", name="shell", task="t", config={"tool": "shell", "command": "ls"}
            ),
            WorkflowAgent(id="2", name="llm", task="t", config={"tool": "llm"}),
            WorkflowAgent(id="3", name="llm", task="t"),
        ],
    )
    assert [direct_tool(wf, i) for i in "123"] == ["shell", None, None]
