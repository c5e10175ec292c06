"""Exact rules of LeaderCore on a simulated clock, driven as workflows/leader/workflow.py drives it.

What the integration tests could only check as "nothing happened within a second" is
checked here at the exact instant it is due, and one second before: the stall ladder rung
by rung, the plan review and its timeout, a pause. ``Shell`` plays the workflow's part
(start attempts, stop them, let them end, answer for the planner); ``now`` is an explicit
clock that only the test moves.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from xsky.artifacts import ArtifactRef
from xsky.leader.core import (
    CallPlanner,
    Command,
    LeaderCore,
    Rejected,
    StartAgent,
    StopAgent,
)
from xsky.leader.state import (
    ApprovePlanRequest,
    EndRunRequest,
    PauseRequest,
    ReplanRequest,
    SkipTaskRequest,
)
from xsky.plan.agent_config import StallWindows
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.xml import workflow_to_xml
from xsky.runs import AgentOutcome, ProgressReport, RunInput, RunOptions

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def workflow(*agents: str | tuple[str, str]) -> Workflow:
    """Agents by id; ``(id, dependency)`` for one with a dependency."""
    made = []
    for a in agents:
        agent_id, depends = (a, "") if isinstance(a, str) else a
        made.append(
            WorkflowAgent(
                id=agent_id,
                name="llm",
                task=f"step {agent_id}",
                depends=[depends] if depends else [],
            )
        )
    return Workflow(name="rules", task_id="rules", agents=made)


class Shell:
    """The workflow's part: it carries out the core's commands and tells it how attempts end."""

    def __init__(self, plan: Workflow, **options: object) -> None:
        self.now = T0
        self.core = LeaderCore(
            RunInput(workflow=plan, options=RunOptions(**options)), "run-1", self.now
        )
        self.running: dict[str, int] = {}  # agent id → dispatch of its attempt
        self.stopping: list[str] = []  # attempts asked to stop, not yet acknowledged
        self.planner: list[str] = []  # reasons of planner calls in flight
        self.started: list[tuple[str, int, datetime]] = []  # every StartAgent, with when

    def apply(self, commands: list[Command]) -> list[Command]:
        for c in commands:
            if isinstance(c, StartAgent):
                self.running[c.agent_id] = c.dispatch
                self.started.append((c.agent_id, c.dispatch, self.now))
            elif isinstance(c, StopAgent):
                self.stopping.append(c.agent_id)
            elif isinstance(c, CallPlanner):
                self.planner.append(c.reason)
        return commands

    def loop(self) -> list[Command]:
        """The top of the main loop: start what may start."""
        return self.apply(self.core.dispatch(self.now))

    def at(self, seconds: float) -> list[Command]:
        """The loop's timer fired ``seconds`` after T0: tick, then dispatch, as the workflow does."""
        self.now = T0 + timedelta(seconds=seconds)
        return self.apply(self.core.tick(self.now)) + self.loop()

    def acknowledge_stops(self) -> None:
        """Each stopped attempt's activity acknowledged its cancellation."""
        for agent_id in self.stopping:
            task = self.core.tasks[agent_id]
            self.apply(
                self.core.attempt_failed(agent_id, task, self.running[agent_id], None, self.now)
            )
            self.core.attempt_ended(agent_id, self.running.pop(agent_id))
        self.stopping.clear()
        self.loop()

    def complete(self, agent_id: str) -> None:
        dispatch = self.running.pop(agent_id)
        outcome = AgentOutcome(
            kind="completed",
            result=f"r{agent_id}",
            result_ref=ArtifactRef(
                uri=f"artifact:run-1/{agent_id}/result.txt", size=1, sha256="0" * 64, preview="r"
            ),
        )
        self.core.attempt_succeeded(
            agent_id, self.core.tasks[agent_id], dispatch, outcome, self.now
        )
        self.core.attempt_ended(agent_id, dispatch)
        self.loop()

    def planner_keeps_the_plan(self) -> None:
        """The planner answers an automatic replan with the same plan (as _replan_in_background)."""
        reason = self.planner.pop(0)
        core = self.core
        _, stops = core.apply_plan(
            core.checks.plan(core.state.plan.plan), core.plans.auto_label(reason), self.now
        )
        self.apply(stops)
        core.planner_finished()
        self.loop()

    def due(self) -> float | None:
        """When the workflow's timer is armed for, in seconds after T0."""
        deadline = self.core.next_deadline(self.now)
        return None if deadline is None else (deadline - T0).total_seconds()

    def status(self, agent_id: str) -> str:
        return {t.agent_id: t for t in self.core.views.board_page(self.now).tasks}[agent_id].status


# -- the stall ladder ------------------------------------------------------------------------------


def test_the_stall_ladder_nudges_restarts_replans_and_escalates_each_at_its_second():
    """nudge at 180 s without progress, restart at 420 s, then (a replan left) replan; the
    replanned task climbs again, and with no replan left a person is asked. Four dispatches."""
    shell = Shell(
        workflow("1"), max_auto_replans=1, stall=StallWindows(nudge_after=180, restart_after=420)
    )
    core = shell.core
    assert shell.loop() == [StartAgent("1", 1)]
    assert shell.due() == 180

    # Dispatch 1: the nudge is due at 180 s of no progress, not a second before.
    assert shell.at(179) == [] and core.nudges_for("T-1") == []
    assert shell.at(180) == [] and len(core.nudges_for("T-1")) == 1
    assert "no progress for 180s" in core.nudges_for("T-1")[0]
    assert shell.due() == 420  # the restart counts from the same last progress
    assert shell.at(419) == []
    assert shell.at(420) == [StopAgent("1")]
    assert shell.at(420) == []  # stopping: no second stop, no other rung, until it ends
    shell.acknowledge_stops()
    assert shell.started[-1] == ("1", 2, T0 + timedelta(seconds=420))  # restarted at once

    # Dispatch 2, at ladder level 2: 420 s after its start it is replanned (a replan is left).
    assert shell.due() == 840
    assert shell.at(839) == []
    commands = shell.at(840)
    assert StopAgent("1") in commands and len(shell.planner) == 1
    assert shell.planner[0].startswith("T-1 stalled (no progress for 420s after a restart")
    assert core.tasks["1"].stored == "failed" and core.dispatch(shell.now) == []  # replanning
    shell.acknowledge_stops()  # the abandoned attempt ends: nothing starts while replanning
    assert shell.started[-1][1] == 2
    shell.planner_keeps_the_plan()
    assert shell.started[-1] == ("1", 3, T0 + timedelta(seconds=840))
    assert core.state.plan.history[-1].reason.startswith("automatic replan 1/1: T-1 stalled")

    # Dispatch 3: the ladder starts over (nudge, restart); dispatch 4 escalates.
    assert shell.at(840 + 179) == [] and len(core.nudges_for("T-1")) == 1
    assert shell.at(840 + 180) == [] and len(core.nudges_for("T-1")) == 2
    assert shell.at(840 + 420) == [StopAgent("1")]
    shell.acknowledge_stops()
    assert shell.started[-1] == ("1", 4, T0 + timedelta(seconds=1260))
    assert shell.at(1260 + 419) == [] and core.pending_requests() == []
    assert shell.at(1260 + 420) == [StopAgent("1")]
    (request,) = core.pending_requests()
    assert request.id.startswith("E-") and request.kind == "escalation"
    assert "no replans left" in request.text and request.task_id == "T-1"
    shell.acknowledge_stops()
    assert shell.status("1") == "blocked" and core.tasks["1"].attempt == 4
    assert len(shell.started) == 4 and shell.planner == []
    assert all("no progress" in n for n in core.nudges_for("T-1"))
    assert [line.split(" (")[0] for line in core.flow.log] == [
        "stall ladder: T-1 nudge",
        "stall ladder: T-1 restart",
        "stall ladder: T-1 replan",
        "stall ladder: T-1 nudge",
        "stall ladder: T-1 restart",
        "stall ladder: T-1 escalate",
    ]
    # Escalated: the ladder is over; only the request's own deadline is left to wait for.
    assert shell.due() == 1680 + 86400  # request_timeout
    assert shell.at(1680 + 86400 - 1) == [] and core.pending_requests() == [request]

    # A person decides.
    _, stops = core.people.skip(SkipTaskRequest(task_id="T-1", result="done by hand"), shell.now)
    assert stops == [] and core.pending_requests() == [] and core.finished()
    result = core.views.result(shell.now)
    assert result.status == "completed" and result.agents[0].result == "done by hand"


def test_without_a_replan_left_the_ladder_escalates_after_the_restart():
    shell = Shell(
        workflow("1"), max_auto_replans=0, stall=StallWindows(nudge_after=10, restart_after=30)
    )
    shell.loop()
    shell.at(10)
    assert shell.at(30) == [StopAgent("1")]
    shell.acknowledge_stops()
    assert shell.at(30 + 29) == []
    assert shell.at(30 + 30) == [StopAgent("1")] and shell.planner == []
    (request,) = shell.core.pending_requests()
    assert request.kind == "escalation" and shell.core.tasks["1"].attempt == 2


def test_progress_starts_the_ladder_over():
    shell = Shell(workflow("1"), stall=StallWindows(nudge_after=180, restart_after=420))
    shell.loop()
    shell.at(180)
    assert shell.core.state.ladder.levels == {"T-1": 1}
    shell.now = T0 + timedelta(seconds=300)
    shell.core.report_progress(ProgressReport(task_id="T-1", dispatch=1, message="step"), shell.now)
    assert shell.core.state.ladder.levels == {} and shell.due() == 300 + 180
    assert shell.at(420) == []  # the restart that was due at 420 s is not: progress came at 300 s
    assert shell.at(479) == [] and len(shell.core.nudges_for("T-1")) == 1
    assert shell.at(480) == [] and len(shell.core.nudges_for("T-1")) == 2


def test_the_ladder_counts_from_the_attempts_start_and_a_started_report_is_not_progress():
    """Time queued before a worker took the attempt is not idleness; a "started" report
    (sent while the agent works, without progress) does not start the ladder over."""
    shell = Shell(workflow("1"), stall=StallWindows(nudge_after=180, restart_after=420))
    shell.loop()
    shell.now = T0 + timedelta(seconds=100)
    started = ProgressReport(task_id="T-1", dispatch=1, message="started", progress=False)
    shell.core.report_progress(started, shell.now)
    assert shell.status("1") == "in_progress" and shell.due() == 100 + 180
    assert shell.at(279) == [] and shell.core.nudges_for("T-1") == []
    assert shell.at(280) == [] and len(shell.core.nudges_for("T-1")) == 1
    shell.now = T0 + timedelta(seconds=300)
    shell.core.report_progress(started, shell.now)
    assert shell.core.state.ladder.levels == {"T-1": 1} and shell.due() == 100 + 420
    assert shell.at(519) == [] and shell.at(520) == [StopAgent("1")]


def test_a_switched_off_ladder_never_acts():
    shell = Shell(workflow("1"), stall=StallWindows(enabled=False))
    shell.loop()
    assert shell.due() is None
    assert shell.at(10**6) == [] and shell.core.nudges_for("T-1") == []


def test_the_timer_is_armed_for_the_first_rung_of_every_running_agent():
    """Agents on their own windows, on the run's and with the ladder off, at different rungs:
    the timer waits for the earliest rung of any of them, to the microsecond."""
    agents = [
        WorkflowAgent(id="1", name="llm", task="on the run's windows"),
        WorkflowAgent(
            id="2",
            name="llm",
            task="its own windows",
            config={"stall": {"nudgeAfter": 60.000001, "restartAfter": 100}},
        ),
        WorkflowAgent(id="3", name="llm", task="no ladder", config={"stall": False}),
    ]
    shell = Shell(
        Workflow(name="rules", task_id="rules", agents=agents),
        stall=StallWindows(nudge_after=180, restart_after=420),
    )
    shell.loop()
    assert set(shell.running) == {"1", "2", "3"} and shell.due() == 60.000001
    assert shell.at(60) == [] and shell.core.nudges_for("T-2") == []
    assert shell.at(60.000001) == [] and len(shell.core.nudges_for("T-2")) == 1
    assert shell.due() == 100  # agent 2's restart, counted from its start like its nudge
    shell.complete("2")
    assert shell.due() == 180  # agent 1's nudge; agent 3 never stalls
    shell.complete("1")
    assert shell.due() is None


# -- the plan review ---------------------------------------------------------------------------


def test_nothing_is_dispatched_while_the_plan_waits_for_review_whatever_the_time():
    shell = Shell(workflow("1"), review=True, review_timeout=3600)
    assert shell.loop() == [] and shell.at(3599) == []
    assert [r.id for r in shell.core.pending_requests(with_review=True)] == ["R-1"]
    shell.core.checks.approve_plan(ApprovePlanRequest(version=1))
    shell.core.people.approve_plan(ApprovePlanRequest(version=1), shell.now)
    assert [c.agent_id for c in shell.loop()] == ["1"]  # type: ignore[union-attr]


def test_a_replan_during_review_does_not_approve_and_the_approval_must_name_the_new_version():
    """As the leader's replan update does: apply the person's plan; the review still waits."""
    shell = Shell(workflow("1"), review=True)
    core = shell.core
    new = workflow("1", "2")
    core.checks.replan(ReplanRequest(xml=workflow_to_xml(new)))
    summary, stops = core.apply_plan(core.checks.plan(new), "replaced by a person", shell.now)
    assert summary == "added 2" and stops == []
    assert core.state.plan.review == "waiting" and shell.loop() == [] and shell.at(60) == []
    with pytest.raises(Rejected, match="you reviewed v1 but the plan is now v2"):
        core.checks.approve_plan(ApprovePlanRequest(version=1))
    # a version the plan never had is not said as one "reviewed" that changed since
    with pytest.raises(Rejected, match="there is no plan v3: the plan waiting for review is v2"):
        core.checks.approve_plan(ApprovePlanRequest(version=3))
    core.checks.approve_plan(ApprovePlanRequest(version=2))
    core.people.approve_plan(ApprovePlanRequest(version=2, comment="looks good"), shell.now)
    assert [c.agent_id for c in shell.loop()] == ["1", "2"]  # type: ignore[union-attr]
    assert core.state.plan.history[-1].reason == "plan v2 approved: looks good"


def test_the_review_deadline_is_the_timeout_after_the_start():
    shell = Shell(workflow("1"), review=True, review_timeout=3600)
    assert shell.core.state.plan.review_deadline == T0 + timedelta(seconds=3600)
    (review,) = shell.core.pending_requests(with_review=True)
    assert review.deadline == T0 + timedelta(seconds=3600)


def test_an_unreviewed_plan_is_cancelled_at_the_timeout():
    shell = Shell(workflow("1", ("2", "1")), review=True, review_timeout=3600)
    shell.now = T0 + timedelta(seconds=3600)
    assert shell.core.review_timed_out(shell.now) is False  # the run ends here
    assert shell.loop() == [] and shell.core.finished()
    result = shell.core.views.result(shell.now)
    assert result.status == "cancelled"
    assert result.summary.startswith("cancelled: nobody approved the plan within 3600s")
    assert [(a.status, a.attempts) for a in result.agents] == [("cancelled", 0), ("cancelled", 0)]
    with pytest.raises(Rejected, match="the run has finished"):
        shell.core.checks.approve_plan(ApprovePlanRequest())


def test_an_unreviewed_plan_runs_at_the_timeout_when_so_configured():
    shell = Shell(workflow("1"), review=True, review_timeout=3600, review_timeout_action="approve")
    shell.now = T0 + timedelta(seconds=3600)
    assert shell.core.review_timed_out(shell.now) is True
    assert shell.core.state.plan.review == "approved_by_timeout"
    assert "approved automatically: nobody reviewed the plan within 3600s" in (
        shell.core.state.plan.history[-1].reason
    )
    assert [c.agent_id for c in shell.loop()] == ["1"]  # type: ignore[union-attr]
    shell.complete("1")
    assert shell.core.finished() and shell.core.views.result(shell.now).status == "completed"


# -- pause -----------------------------------------------------------------------------------------


def test_a_pause_starts_nothing_new_at_any_time_and_resume_starts_the_next():
    shell = Shell(workflow("1", ("2", "1"), ("3", "2")))
    shell.loop()
    assert shell.apply(shell.core.people.pause(PauseRequest(reason="checking something"))) == []
    shell.now = T0 + timedelta(seconds=5)
    shell.complete("1")  # completes while paused
    assert shell.status("1") == "completed" and shell.status("2") == "pending"
    assert shell.at(10**6) == [] and shell.core.tasks["2"].attempt == 0
    assert not shell.core.finished()  # the run waits for resume, with work ready
    assert shell.core.views.run_state() == "paused"
    # The board says how to resume it with the command a person types, and the Web UI's name.
    paused = next(n for n in shell.core.views.notices() if "paused" in n)
    assert (
        f"`starter.py resume {shell.core.views.run_id}`" in paused and "`resume` signal" in paused
    )
    shell.core.people.resume()
    assert [(c.agent_id, c.dispatch) for c in shell.loop()] == [("2", 1)]  # type: ignore[union-attr]


def test_a_paused_run_a_person_ended_offers_no_resume():
    """After end_run on a paused run its board said "paused — starter.py resume ID", which
    `resume` then refused: the run had ended."""
    shell = Shell(workflow("1", ("2", "1")))
    shell.loop()
    shell.apply(shell.core.people.pause(PauseRequest()))
    shell.complete("1")
    assert any("paused" in n for n in shell.core.views.notices())
    shell.apply(shell.core.people.end(EndRunRequest(reason="enough"), shell.now))
    assert not any("resume" in n for n in shell.core.views.notices())


def test_a_pause_that_stops_running_agents_runs_them_again_after_resume():
    shell = Shell(workflow("1", "2"))
    shell.loop()
    stops = shell.apply(shell.core.people.pause(PauseRequest(cancel_running=True)))
    assert stops == [StopAgent("1"), StopAgent("2")]
    shell.acknowledge_stops()
    assert shell.status("1") == shell.status("2") == "pending" and shell.running == {}
    shell.core.people.resume()
    assert [(c.agent_id, c.dispatch) for c in shell.loop()] == [("1", 2), ("2", 2)]  # type: ignore[union-attr]


# -- max_parallel ----------------------------------------------------------------------------------


def test_max_parallel_fills_every_slot_and_no_more():
    shell = Shell(workflow(*[str(i) for i in range(6)]), max_parallel=2)
    assert [c.agent_id for c in shell.loop()] == ["0", "1"]  # type: ignore[union-attr]
    assert shell.loop() == []
    shell.complete("0")
    assert sorted(shell.running) == ["1", "2"]
    for agent_id in ["1", "2", "3"]:
        shell.complete(agent_id)
        assert len(shell.running) == 2
    shell.complete("4")
    assert sorted(shell.running) == ["5"]


def test_allowing_a_call_for_the_run_answers_the_same_call_another_agent_waits_on():
    from xsky.leader.state import ApproveToolRequest
    from xsky.runs import RequestPayload

    asked: list[str] = []
    for answer in (True, False):  # the patch: a run from now, one from before v0.11.9
        shell = Shell(workflow("1", "2", "3"))
        shell.core.configure(coordinating=False, patched=lambda p, a=answer: asked.append(p) is None and a)  # fmt: skip
        shell.loop()
        for agent_id, command in (("1", "git push"), ("2", "git push"), ("3", "git tag v1")):
            call = RequestPayload(question="", tool="shell", arguments={"command": command})
            outcome = AgentOutcome(kind="needs_approval", request=call)
            dispatch = shell.running.pop(agent_id)
            task = shell.core.tasks[agent_id]
            shell.core.attempt_succeeded(agent_id, task, dispatch, outcome, shell.now)
            shell.core.attempt_ended(agent_id, dispatch)
        pending = {r.task_id: r.id for r in shell.core.state.requests.requests if r.status == "pending"}  # fmt: skip
        said = shell.core.people.approve_tool(
            ApproveToolRequest(request_id=pending["T-1"], decision="allow_run"), shell.now
        )
        still = {r.task_id for r in shell.core.state.requests.requests if r.status == "pending"}
        if answer:  # T-2's identical call is allowed too; T-3's other call still waits
            assert still == {"T-3"} and "the same call of T-2" in said.message
        else:
            assert still == {"T-2", "T-3"}
        shell.loop()  # what was answered runs again
        assert sorted(shell.running) == (["1", "2"] if answer else ["1"])
    # (asked once a run; the other patch asked here clears the answered requests' notes)
    assert [p for p in asked if p != "answered-wait-note-cleared"] == [
        "approve-run-answers-alike"
    ] * 2


def test_ending_a_run_while_a_replan_stops_a_running_agent_it_removed_is_refused_in_words():
    """`end_run` right after a replan removed a running agent: the agent is still active (its
    stop not yet acknowledged) and no longer on the board — the check raised KeyError('2'), the
    stock CLI's reply was "'2' (type: KeyError, retryable: true)" (walk10)."""
    shell = Shell(workflow("1", "2"))
    core = shell.core
    shell.loop()  # both run
    new = workflow("1")
    _, stops = core.apply_plan(core.checks.plan(new), "replaced by a person", shell.now)
    shell.apply(stops)
    assert shell.stopping == ["2"] and "2" not in core.tasks
    with pytest.raises(Rejected, match=r"agents are still running \(T-1, T-2\)"):
        core.checks.end(EndRunRequest(reason="fixed by hand"))
