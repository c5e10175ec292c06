"""One agent at a time: pause, resume, reset and a new timeout for one task of a running plan."""

from __future__ import annotations

import pytest

from tests.unit.test_leader_core_rules import Shell, workflow
from xsky.leader.commands import Rejected, StopAgent
from xsky.leader.state import ResetTaskRequest, TaskRequest, TaskTimeoutRequest


def two_running() -> Shell:
    shell = Shell(workflow("1", "2", ("3", "2")))
    assert sorted(c.agent_id for c in shell.loop()) == ["1", "2"]  # type: ignore[union-attr]
    return shell


def test_a_paused_agent_stops_and_waits_while_the_others_go_on_and_resumes_from_its_checkpoint():
    shell = two_running()
    core = shell.core
    core.checks.pause_task(TaskRequest(task_id="T-1"))
    said, stops = core.people.pause_task(TaskRequest(task_id="T-1"))
    assert "T-1 paused: its attempt is stopped" in said.message
    assert [type(c) for c in shell.apply(stops)] == [StopAgent]
    shell.acknowledge_stops()
    assert "1" not in shell.running and shell.status("1") == "blocked"
    shown = {t.agent_id: t for t in core.views.board_page(shell.now).tasks}["1"]
    assert shown.blocked_reason == "paused by a person (resume_task)"
    shell.complete("2")  # the others go on
    assert list(shell.running) == ["3"]
    shell.complete("3")
    assert not core.finished()  # the run waits for the paused agent
    with pytest.raises(Rejected, match="T-1 is paused already"):
        core.checks.pause_task(TaskRequest(task_id="T-1"))
    core.checks.resume_task(TaskRequest(task_id="T-1"))
    core.people.resume_task(TaskRequest(task_id="T-1"))
    shell.loop()
    assert shell.running.get("1") == 2  # dispatched again: the attempt resumes its checkpoint
    rendered, markers = core.inputs.render("1")
    assert core.inputs.agent_input("1", rendered, 2, markers, None).resume
    with pytest.raises(Rejected, match="T-2 is not paused"):
        core.checks.resume_task(TaskRequest(task_id="T-2"))


def test_a_reset_starts_the_attempt_again_from_its_checkpoint_or_from_scratch_once():
    shell = two_running()
    core = shell.core
    said, stops = core.people.reset_task(ResetTaskRequest(task_id="T-1", fresh=True))
    assert said.message == "T-1 reset: its attempt starts again from scratch, now"
    shell.apply(stops)
    shell.acknowledge_stops()
    assert shell.running.get("1") == 2
    rendered, markers = core.inputs.render("1")
    assert not core.inputs.agent_input("1", rendered, 2, markers, None).resume  # from scratch
    assert core.inputs.agent_input("1", rendered, 3, markers, None).resume  # that one only


def test_a_new_timeout_is_for_the_agents_next_attempt_and_a_bad_one_is_refused():
    shell = two_running()
    core = shell.core
    assert core.inputs.settings_for("1").start_to_close != 90
    said = core.people.task_timeout(TaskTimeoutRequest(task_id="T-1", seconds=90))
    assert "its next attempt may take 90s (the attempt running now keeps its own" in said.message
    assert core.inputs.settings_for("1").start_to_close == 90
    with pytest.raises(Rejected, match="give 1 to 604800 seconds"):
        core.checks.task_timeout(TaskTimeoutRequest(task_id="T-1", seconds=0))
    shell.complete("1")
    with pytest.raises(Rejected, match="has already ended"):
        core.checks.task_timeout(TaskTimeoutRequest(task_id="T-1", seconds=30))
