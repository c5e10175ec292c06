"""Two runs compared (xsky/run_diff.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from xsky.leader.ledger import LedgerEntry
from xsky.plan.budget import Usage
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.run_diff import diff_runs, result_diff
from xsky.runs import AgentReport

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def plan(task_2: str = "b") -> Workflow:
    return Workflow(
        name="p",
        task_id="p",
        agents=[
            WorkflowAgent(id="1", name="llm", task="a"),
            WorkflowAgent(id="2", name="llm", task=task_2, depends=["1"]),
        ],
    )


def report(
    agent_id: str, result: str, attempts: int = 1, tokens: int = 0, seconds: float = 1.0
) -> AgentReport:
    return AgentReport(
        id=agent_id,
        task_id=f"T-{agent_id}",
        name="llm",
        status="completed",
        result=result,
        attempts=attempts,
        started_at=T0,
        ended_at=T0 + timedelta(seconds=seconds),
        usage=Usage(input_tokens=tokens) if tokens else None,
    )


def test_results_differ_by_line_or_by_field():
    assert result_diff("same", "same") == []
    assert result_diff('{"a": 1, "b": 2}', '{"a": 1, "b": 3}') == ["result.b: 2 → 3"]
    said = result_diff("one\ntwo", "one\nthree")
    assert said[0] == "result differs:" and "  -two" in said and "  +three" in said


def test_only_what_changed_is_named_and_carried_results_count_as_the_same():
    a = [report("1", "x", tokens=100), report("2", "y", tokens=50)]
    b = [report("1", "x", attempts=0), report("2", "z", tokens=80, attempts=2)]  # 1 carried
    judged = LedgerEntry(
        at=T0, point="result", task_id="T-2", verdict="retry", reason="vague", by="leader"
    )
    accepted = LedgerEntry(  # run A's coordinator judged T-1, carried into B unjudged
        at=T0, point="result", task_id="T-1", verdict="accept", reason="fine", by="leader"
    )
    d = diff_runs("A", plan(), a, "B", plan("b, again"), b, [accepted], [judged])
    assert d.changed == ["2"]
    said = d.agents[1].what
    assert said[0] == "task: b → b, again"
    assert "decisions: (none) → result: retry (leader)" in said
    assert "dispatches: 1 → 2" in said and "tokens: 50 → 80" in said
    assert not any(w.startswith("attempts:") for w in said), said  # the board's tries are not these
    assert d.summary() == "1 of 2 shared agent(s) differ (T-2)"


def test_the_runs_variables_and_each_changed_config_key_are_named():
    """Only a variable differed: the diff said 'T-1 result differs' with no cause shown; a
    config compared whole was cut at 80 characters, hiding what changed."""
    long = "x" * 120
    a = Workflow(
        name="p",
        task_id="p",
        agents=[
            WorkflowAgent(
                id="1", name="shell", task="t", config={"tool": "shell", "command": long + "a"}
            )
        ],
    )
    b = a.model_copy(
        update={
            "agents": [
                a.agents[0].model_copy(update={"config": {"tool": "shell", "command": long + "b"}})
            ]
        }
    )
    d = diff_runs(
        "A",
        a,
        [report("1", "r1")],
        "B",
        b,
        [report("1", "r2")],
        variables_a={"topic": "cats"},
        variables_b={"topic": "dogs"},
    )
    assert d.run == ["variable topic: cats → dogs"]
    assert "1 run variable(s) differ" in d.summary()
    (line,) = [w for w in d.agents[0].what if w.startswith("config")]
    assert line.startswith("config.command: …") and line.endswith("xa → …" + "x" * 20 + "b")


def test_result_names_dispatches_apart_from_the_boards_tries():
    """`result --agent N` of a failed agent said "failed after 2 attempts" where the board said
    tries 5 (walk9): it counts dispatches, and now says so."""
    from cli.runs_cmd import agent_failure
    from xsky.runs import AgentReport

    report = AgentReport(
        id="2", task_id="T-2", name="shell", status="failed", error="exit 5", attempts=2
    )
    assert agent_failure(report) == "T-2 (shell) failed after 2 dispatches: exit 5"
