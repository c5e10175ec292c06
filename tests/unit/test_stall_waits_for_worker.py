"""A task whose attempt only waits for a worker is not stalled (patch stall-waits-for-worker).

chaos14: a run's direct `shell` task waited ~3.5 min for a worker (its server had moved, no
worker polled its queue) and the board said "nudged: You have made no progress for 228s…";
a longer outage climbed to a restart and a replan that failed the task "stalled" — work that
never ran. Before a rung the workflow asks the server for the run's pending attempts
(activity leader_attempts) and gives the core its answer (LeaderCore.attempts_seen); here the
core with a fake clock, the server's answer given as it would be."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.unit.test_leader_core import T0
from xsky.leader.core import CallPlanner, LeaderCore, StartAgent, StopAgent
from xsky.plan.agent_config import StallWindows
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import PendingAttempt, RunInput, RunOptions

WINDOWS = StallWindows(nudge_after=180, restart_after=420)


def core_of(agent: WorkflowAgent, patched: bool = True) -> LeaderCore:
    core = LeaderCore(
        RunInput(
            workflow=Workflow(name="n", task_id="t", task_prompt="p", agents=[agent]),
            options=RunOptions(max_auto_replans=2, stall=WINDOWS),
        ),
        "run-1",
        T0,
        patched=lambda patch_id: patched,
    )
    (s,) = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    assert s.agent_id == agent.id
    return core


def shell(agent_id: str = "1") -> WorkflowAgent:
    return WorkflowAgent(
        id=agent_id, name="shell", task="run it", config={"tool": "shell", "command": "make"}
    )


def llm(agent_id: str = "1") -> WorkflowAgent:
    return WorkflowAgent(id=agent_id, name="llm", task="think")


def scheduled(task_id: str = "T-1", dispatch: int = 1, attempt: int = 1) -> PendingAttempt:
    return PendingAttempt(
        activity_id=f"{task_id}-v1-d{dispatch}",
        state="scheduled",
        attempt=attempt,
        scheduled_at=T0,
    )


def started(at: datetime, task_id: str = "T-1", dispatch: int = 1) -> PendingAttempt:
    return PendingAttempt(
        activity_id=f"{task_id}-v1-d{dispatch}", state="started", started_at=at, worker="w"
    )


def step(core: LeaderCore, now: datetime, pending: list[PendingAttempt] | None):
    """One turn of the workflow's loop: the server asked about the due tasks (None: a history
    before the patch, not asked), then the tick."""
    due = core.stalls_due(now)
    if pending is None or not due:
        return core.tick(now)
    core.attempts_seen(due, pending, now)
    return core.tick(now, set(due))


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


def test_before_the_patch_a_task_waiting_for_a_worker_climbs_to_a_replan() -> None:
    """The bug, measured: 17 minutes with no worker → nudged, restarted, failed 'stalled' and
    a replan spent — for a task that never ran."""
    core = core_of(llm(), patched=False)
    assert step(core, seconds(228), None) == []
    assert (core.tasks["1"].last_progress or "").startswith(
        "nudged: You have made no progress for 228s"
    )
    assert step(core, seconds(228 + 420), None) == [StopAgent("1")]  # restart
    core.attempt_failed("1", core.tasks["1"], 1, None, seconds(650))
    core.attempt_ended("1", 1)
    core.dispatch(seconds(650))  # the restart: dispatch 2, still no worker
    commands = step(core, seconds(650 + 420), None)
    assert any(isinstance(c, CallPlanner) for c in commands)
    assert (core.tasks["1"].error or "").startswith("stalled")


def test_an_attempt_no_worker_started_is_not_climbed_however_long() -> None:
    core = core_of(llm())
    for n in range(1, 8):  # 7 × 180 s: ~21 minutes of outage
        now = seconds(180 * n + 1)
        assert core.stalls_due(now) == ["T-1"]
        assert step(core, now, [scheduled()]) == []
        task = core.tasks["1"]
        assert core.state.ladder.levels.get("T-1", 0) == 0, "no rung for a task that never ran"
        assert (task.last_progress or "").startswith("waiting for a worker: attempt 1 scheduled")
        assert core.briefs.nudge_count("T-1") == 0
        # the next look: one nudge window on
        assert core.next_deadline(now) == now + timedelta(seconds=180)
    assert core.tasks["1"].stored in ("dispatched", "in_progress")
    assert core.plans.state.auto_replans == 0


def test_once_a_worker_starts_it_the_idle_clock_counts_from_its_start() -> None:
    core = core_of(llm())
    step(core, seconds(181), [scheduled()])  # waiting
    # A worker started it at 300 s; the next look, at 361 s, finds it started: not idle 180 s yet.
    assert step(core, seconds(361), [started(seconds(300))]) == []
    assert core.tasks["1"].last_progress is None  # the waiting note went with the wait
    assert core.state.ladder.levels.get("T-1", 0) == 0
    assert core.next_deadline(seconds(361)) == seconds(480)
    # ... and at 480 s, still started and without progress: a real stall, nudged.
    assert step(core, seconds(480), [started(seconds(300))]) == []
    assert core.state.ladder.levels["T-1"] == 1
    assert core.briefs.nudges_for("T-1") == [
        "You have made no progress for 180s. If you are stuck, try a different approach; "
        "if you have enough, finish now with your best answer."
    ]


def test_a_retry_waiting_after_its_worker_was_lost_does_not_climb_past_the_nudge() -> None:
    core = core_of(llm())
    assert step(core, seconds(181), [started(T0)]) == []  # running, no progress: nudged
    assert core.state.ladder.levels["T-1"] == 1
    # its worker died; the retry (attempt 2) waits for another for 20 minutes
    for n in range(1, 4):
        assert step(core, seconds(181 + 420 * n), [scheduled(attempt=2)]) == []
        assert core.state.ladder.levels["T-1"] == 1
        assert "attempt 2 scheduled" in (core.tasks["1"].last_progress or "")


def test_a_stalled_running_attempt_still_climbs() -> None:
    core = core_of(llm())
    assert step(core, seconds(181), [started(T0)]) == []
    assert core.state.ladder.levels["T-1"] == 1
    assert step(core, seconds(181 + 420), [started(T0)]) == [StopAgent("1")]  # restart


def test_an_attempt_the_server_does_not_hold_climbs_as_ever() -> None:
    """Not found (a local activity, one just ended, another dispatch's): no word, the ladder's."""
    core = core_of(llm())
    other = scheduled(dispatch=7)
    step(core, seconds(181), [other, scheduled(task_id="T-10")])
    assert core.state.ladder.levels["T-1"] == 1


def test_a_task_due_but_not_asked_about_waits_for_its_own_look() -> None:
    core = core_of(llm())
    assert core.tick(seconds(181), set()) == []  # due, not asked: no rung
    assert core.state.ladder.levels.get("T-1", 0) == 0
    assert core.next_deadline(seconds(181)) == seconds(181)  # asked at once


def test_a_started_report_clears_the_waiting_note() -> None:
    from xsky.runs import ProgressReport

    core = core_of(llm())
    step(core, seconds(181), [scheduled()])
    core.report_progress(
        ProgressReport(task_id="T-1", dispatch=1, progress=False, started_at=seconds(200)),
        seconds(205),
    )
    assert core.tasks["1"].last_progress is None


def test_a_direct_tool_agent_is_not_nudged() -> None:
    """No model reads a nudge: the rung is counted, the board says so, nothing is sent."""
    core = core_of(shell())
    assert step(core, seconds(181), [started(T0)]) == []
    assert core.state.ladder.levels["T-1"] == 1
    assert core.briefs.nudge_count("T-1") == 0
    note = core.tasks["1"].last_progress or ""
    assert note.startswith("no progress for 181s: a direct shell call, nothing to nudge"), note
    assert step(core, seconds(181 + 420), [started(T0)]) == [StopAgent("1")]


def test_before_the_patch_a_direct_tool_agent_is_nudged_as_ever() -> None:
    core = core_of(shell(), patched=False)
    step(core, seconds(181), None)
    assert core.briefs.nudge_count("T-1") == 1


def test_the_activity_keeps_the_attempts_of_the_tasks_asked_about() -> None:
    from activities.leader_store import _task_of

    assert _task_of("T-1-v1-d2") == "T-1"
    assert _task_of("T-build-v-3-v12-d4-r1") == "T-build-v-3"
    assert _task_of("planner") is None


# -- an attempt an operator paused (patch stall-sees-operator-pause; review19) ----------------


def paused(state: str = "scheduled", attempt: int = 1) -> PendingAttempt:
    """What the server holds of an attempt `temporal activity pause` paused: PAUSED (read as
    scheduled), or PAUSE_REQUESTED while a worker still runs it (read as started)."""
    return PendingAttempt(
        activity_id="T-1-v1-d1",
        state=state,  # type: ignore[arg-type]
        attempt=attempt,
        scheduled_at=T0,
        started_at=T0 if state == "started" else None,
        paused=True,
    )


def test_an_attempt_an_operator_paused_is_said_paused_not_waiting_for_a_worker() -> None:
    core = core_of(llm())
    for n in range(1, 5):
        assert step(core, seconds(180 * n + 1), [paused()]) == []
        note = core.tasks["1"].last_progress or ""
        assert note.startswith(
            "paused by an operator: attempt 1 waits for `temporal activity "
            "unpause --activity-id T-1-v1-d1`"
        ), note
        assert "waiting for a worker" not in note
        assert core.state.ladder.levels.get("T-1", 0) == 0
    assert core.briefs.nudge_count("T-1") == 0
    # unpaused, a worker starts it: the note goes, the clock counts from its start
    assert step(core, seconds(1000), [started(seconds(950))]) == []
    assert core.tasks["1"].last_progress is None


def test_an_attempt_paused_while_it_runs_does_not_climb() -> None:
    core = core_of(llm())
    for n in range(1, 5):  # pause requested, its worker still runs it: no nudge, no restart
        assert step(core, seconds(180 * n + 1), [paused("started")]) == []
        assert core.state.ladder.levels.get("T-1", 0) == 0
    assert "runs until it ends" in (core.tasks["1"].last_progress or "")


def test_before_the_patch_a_paused_attempt_reads_as_before() -> None:
    asked: list[str] = []

    def patched(patch_id: str) -> bool:
        asked.append(patch_id)
        return patch_id != "stall-sees-operator-pause"

    core = core_of(llm())
    core.board.patched = patched
    step(core, seconds(181), [paused()])
    assert (core.tasks["1"].last_progress or "").startswith("waiting for a worker")
    assert "stall-sees-operator-pause" in asked


def test_the_activity_says_a_paused_attempt_paused() -> None:
    from temporalio.api.workflow.v1 import PendingActivityInfo

    from activities.leader_store import _pending

    assert _pending(PendingActivityInfo(activity_id="T-1-v1-d1", state=4, paused=True)).paused
    requested = _pending(PendingActivityInfo(activity_id="T-1-v1-d1", state=5))
    assert requested.paused and requested.state == "started"
    assert not _pending(PendingActivityInfo(activity_id="T-1-v1-d1", state=1)).paused


# -- a direct tool agent's first rung is named for what it did (patch stall-rung-named) -------


def test_a_direct_tool_agents_first_rung_is_logged_and_metered_counted_not_nudge() -> None:
    """review19: the rung nudged nothing, but its log line (and so xsky_stall_steps) said
    'nudge' with the words a model would have been sent."""
    from workflows.leader.metrics import _STALL_STEP

    core = core_of(shell())
    step(core, seconds(181), [started(T0)])
    (line,) = core.take_log()
    assert line.startswith(
        "stall ladder: T-1 counted (no progress for 181s: a direct shell call"
    ), line
    assert "You have made no progress" not in line
    match = _STALL_STEP.match(line)
    assert match is not None and match.group(1) == "counted"
    # a model agent's rung is a nudge, as ever; and later rungs keep their names
    model = core_of(llm())
    step(model, seconds(181), [started(T0)])
    (nudged,) = model.take_log()
    assert nudged.startswith("stall ladder: T-1 nudge (You have made no progress for 181s")
    step(core, seconds(181 + 420), [started(T0)])
    assert [line.split(" (")[0] for line in core.take_log()] == ["stall ladder: T-1 restart"]


def test_before_the_patch_the_direct_tool_agents_rung_is_logged_as_a_nudge() -> None:
    core = core_of(shell())
    core.board.patched = lambda patch_id: patch_id != "stall-rung-named"
    step(core, seconds(181), [started(T0)])
    (line,) = core.take_log()
    assert line.startswith("stall ladder: T-1 nudge (You have made no progress"), line
    assert core.briefs.nudge_count("T-1") == 0  # (still not nudged: stall-waits-for-worker)
