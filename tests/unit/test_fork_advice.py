"""What a refused fork advises for agents that must not run again unasked: forking at an agent
after them helps only once they completed; one whose call is in doubt needs its answer first."""

from __future__ import annotations

from datetime import UTC, datetime

from client.fork import fork_advice
from xsky.leader.state import HumanRequest
from xsky.runs import AgentReport


def _report(agent: str, status: str) -> AgentReport:
    return AgentReport(id=agent, task_id=f"T-{agent}", name="shell", status=status, attempts=2)


def test_an_agent_in_doubt_is_answered_first_not_forked_past():
    # walk9: `fork RUN T-2` after T-1's call was in doubt was refused with "or fork at an agent
    # after them" — T-2 is after T-1, and T-1 (no result yet) still had to run again
    question = HumanRequest(
        id="Q-1",
        kind="question",
        task_id="T-1",
        dispatch=1,
        text="T-1: `git push` may have run",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        choices=["again", "skip", "done"],
    )
    said = ["T-1 (shell): a call of it is in doubt there (Q-1, unanswered)"]
    advice = fork_advice("run-1", said, [_report("1", "blocked")], [question])
    assert "fork at an agent after them" not in advice
    assert "answer Q-1 first (`starter.py answer run-1 Q-1 done`" in advice
    assert advice.startswith("fork with --again")


def test_a_completed_effect_may_be_forked_past():
    said = ['T-1 (shell): its <config> says "idempotent": false']
    advice = fork_advice("run-1", said, [_report("1", "completed")], [])
    assert "or fork at an agent after them" in advice
    # one that did not complete has no result a later fork could carry
    advice = fork_advice("run-1", said, [_report("1", "failed")], [])
    assert "after them" not in advice and "answer" not in advice
