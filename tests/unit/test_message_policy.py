"""What a nudge does to an agent in the middle of a step (RunOptions.messages)."""

from __future__ import annotations

import pytest

from tests.unit.test_leader_core_rules import Shell, workflow
from xsky.leader.commands import Rejected, StopAgent
from xsky.leader.state import NudgeRequest


def running(**options: object) -> Shell:
    shell = Shell(workflow("1"), **options)
    assert [c.agent_id for c in shell.loop()] == ["1"]  # type: ignore[union-attr]
    return shell


def test_queue_keeps_the_nudge_for_the_agents_next_step_and_stops_nothing():
    shell = running()
    req = NudgeRequest(task_id="T-1", message="prefer EU regions")
    shell.core.checks.nudge(req)
    said = shell.core.people.nudge_task(req, shell.now)
    assert "reads it at its next step" in said.message
    assert shell.core.take_outbox() == [] and shell.core.briefs.nudges_for("T-1") == [
        "prefer EU regions"
    ]


def test_interrupt_stops_the_step_and_the_attempt_starts_again_reading_it_first():
    shell = running(messages="interrupt")
    req = NudgeRequest(task_id="T-1", message="stop using the US mirror")
    said = shell.core.people.nudge_task(req, shell.now)
    assert "its step was stopped" in said.message
    stops = shell.apply(shell.core.take_outbox())
    assert [type(c) for c in stops] == [StopAgent] and stops[0].agent_id == "1"  # type: ignore[union-attr]
    shell.acknowledge_stops()
    again = [c for c in shell.started if c[0] == "1"]
    assert len(again) == 2  # dispatched again: it resumes from its checkpoint
    assert shell.core.briefs.nudges_for("T-1") == ["stop using the US mirror"]


def test_reject_refuses_a_nudge_while_the_agent_runs_and_takes_it_when_it_does_not():
    shell = running(messages="reject")
    req = NudgeRequest(task_id="T-1", message="hurry")
    with pytest.raises(
        Rejected, match="in the middle of a step and this run's message policy is reject"
    ):
        shell.core.checks.nudge(req)
    waiting = Shell(workflow("1", ("2", "1")), messages="reject")
    waiting.loop()
    later = NudgeRequest(task_id="T-2", message="when you start: be brief")
    waiting.core.checks.nudge(later)  # T-2 waits for T-1: not mid-step, so it is taken
    waiting.core.people.nudge_task(later, waiting.now)
    assert waiting.core.briefs.nudges_for("T-2") == ["when you start: be brief"]
