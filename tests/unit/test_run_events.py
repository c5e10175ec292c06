"""The run's event stream: what changed between two pictures of a run, as events."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from client.events import EventLog
from xsky.leader.ledger import LedgerEntry
from xsky.leader.run_events import EVENT_TYPES, RunPicture, diff_pictures
from xsky.leader.state import BoardPage, HumanRequest, PlanVersion
from xsky.leader.tasks import TaskView

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def task(
    agent: str, status: str = "pending", depends: tuple[str, ...] = (), **kw: object
) -> TaskView:
    return TaskView.model_validate(
        {
            "id": f"T-{agent}",
            "agentId": agent,
            "sessionId": "run",
            "subject": f"step {agent}",
            "description": f"step {agent}",
            "assignedAgent": "llm",
            "blockedBy": [f"T-{d}" for d in depends],
            "stored": status if status != "blocked" else "pending",
            "status": status,
            **kw,
        }
    )


def picture(
    *tasks: TaskView,
    state: str = "running",
    status: str = "running",
    requests: tuple[HumanRequest, ...] = (),
    version: int = 1,
    decisions: int = 0,
) -> RunPicture:
    board = BoardPage(total=len(tasks), offset=0, tasks=list(tasks), state=state)
    history = [
        PlanVersion(version=v, xml="", reason=f"v{v}", at=NOW) for v in range(1, version + 1)
    ]
    return RunPicture.of(
        "run",
        status,
        board,
        list(requests),
        history,
        decisions,
        "done" if status != "running" else None,
    )


def question(rid: str, on: str) -> HumanRequest:
    return HumanRequest(
        id=rid, kind="question", task_id=on, dispatch=1, text="which one?", created_at=NOW
    )


def kinds(events: list[tuple[str, dict[str, object]]]) -> list[str]:
    return [kind for kind, _ in events]


def test_the_first_picture_is_the_whole_graph_with_its_dependencies():
    events = diff_pictures(None, picture(task("1"), task("2", depends=("1",))))
    assert kinds(events) == ["plan"]
    agents = events[0][1]["agents"]
    assert [(a["task"], a["depends"]) for a in agents] == [("T-1", []), ("T-2", ["T-1"])]


def test_an_agent_that_starts_then_finishes_is_told_once_each():
    a = picture(task("1"), task("2", depends=("1",)))
    b = picture(task("1", "in_progress"), task("2", depends=("1",)))
    c = picture(task("1", "completed", provider="offline"), task("2", depends=("1",)))
    assert kinds(diff_pictures(a, b)) == ["agent.started"]
    done = diff_pictures(b, c)
    assert kinds(done) == ["agent.completed"]
    assert done[0][1]["shown"] == "completed (offline)"
    assert diff_pictures(c, c) == []


def test_a_step_is_told_without_a_status_change():
    a = picture(task("1", "in_progress"))
    b = picture(task("1", "in_progress", iterations=2, lastProgress="read the page"))
    events = diff_pictures(a, b)
    assert events == [
        ("agent.step", {"task": "T-1", "iterations": 2, "progress": "read the page", "tokens": 0})
    ]


def test_a_failed_agent_says_why_and_a_retry_is_told_as_a_new_attempt():
    a = picture(task("1", "in_progress", attempt=1))
    b = picture(task("1", "failed", attempt=1, error="exit 1"))
    c = picture(task("1", "in_progress", attempt=2))
    failed = diff_pictures(a, b)
    assert kinds(failed) == ["agent.failed"] and failed[0][1]["note"] == "exit 1"
    assert kinds(diff_pictures(b, c)) == ["agent.started"]


def test_a_task_no_longer_blocked_is_unblocked_not_reset():
    """Once Q-1 was answered, the task waiting behind it was told as "agent.reset"."""
    a = picture(task("1", "in_progress"), task("3", "blocked", depends=("1",)))
    b = picture(task("1", "in_progress"), task("3", "pending", depends=("1",)))
    assert kinds(diff_pictures(a, b)) == ["agent.unblocked"]
    c = picture(task("1", "failed"), task("3", "pending", depends=("1",)))
    d = picture(task("1", "pending", attempt=2), task("3", "pending", depends=("1",)))
    assert kinds(diff_pictures(c, d)) == ["agent.reset"]  # a retry sends it back


def test_requests_raised_and_answered_and_the_run_state_changes():
    a = picture(task("1", "in_progress"))
    b = picture(
        task("1", "blocked", waitingOn="Q-1"), state="waiting", requests=(question("Q-1", "T-1"),)
    )
    c = picture(task("1", "in_progress"))
    raised = diff_pictures(a, b)
    assert kinds(raised) == ["run.state", "agent.blocked", "request.raised"]
    assert raised[2][1]["id"] == "Q-1" and raised[2][1]["text"] == "which one?"
    assert kinds(diff_pictures(b, c)) == ["run.state", "agent.started", "request.answered"]


def test_a_pause_is_a_run_state_event():
    a = picture(task("1"))
    b = picture(task("1"), state="paused")
    assert diff_pictures(a, b) == [("run.state", {"state": "paused", "was": "running"})]


def test_a_new_plan_version_redraws_the_graph():
    a = picture(task("1", "completed"))
    b = picture(task("1", "completed"), task("2", depends=("1",)), version=2)
    events = diff_pictures(a, b)
    assert kinds(events) == ["plan"]
    assert events[0][1]["version"] == 2 and len(events[0][1]["agents"]) == 2


def test_coordinator_decisions_and_the_end_of_the_run():
    a = picture(task("1", "in_progress"))
    b = picture(task("1", "completed"), status="completed", decisions=1)
    entry = LedgerEntry(
        at=NOW, point="result", task_id="T-1", verdict="accept", reason="it answers"
    )
    events = diff_pictures(a, b, [entry])
    assert kinds(events) == ["agent.completed", "coordinator.decision", "run.ended"]
    assert events[1][1]["verdict"] == "accept"
    assert events[2][1] == {"status": "completed", "summary": "done"}
    assert set(kinds(events)) <= set(EVENT_TYPES)


def test_a_cancelled_runs_end_says_cancelled_once():
    a = picture(task("1", "in_progress"))
    b = picture(task("1", "cancelled"), status="cancelled")
    b = b.model_copy(update={"summary": "cancelled: 0 of 1 agents completed"})
    (ended,) = [data for kind, data in diff_pictures(a, b) if kind == "run.ended"]
    assert ended == {"status": "cancelled", "summary": "0 of 1 agents completed"}


def test_the_event_log_resumes_its_ids_after_a_restart(tmp_path):
    log = EventLog("xsky-a/b", tmp_path)
    first = picture(task("1"))
    log.add(diff_pictures(None, first))
    log.keep(first)
    second = picture(task("1", "in_progress"))
    log.add(diff_pictures(first, second))
    log.keep(second)
    again = EventLog("xsky-a/b", tmp_path)  # a restarted server reads what it told
    assert [e.id for e in again.events] == [1, 2]
    assert again.picture == second
    assert [e.type for e in again.after(1)] == ["agent.started"]
    assert again.after(99) == again.events  # an id of another stream: everything again
    third = picture(task("1", "completed"))
    assert [e.id for e in again.add(diff_pictures(again.picture, third))] == [3]


def test_the_events_command_prints_no_control_a_terminal_obeys(capsys) -> None:
    from datetime import UTC, datetime

    from cli.events_cmd import _print
    from xsky.leader.run_events import RunEvent

    said = "Approve? \u009b2J\u009b31mOK\u202egnp.exe"  # an agent's question: C1 CSI, bidi RLO
    _print(
        RunEvent(id=1, run="r", at=datetime.now(UTC), type="request.raised", data={"text": said})
    )
    out = capsys.readouterr().out
    assert "\u009b" not in out and "\u202e" not in out
    assert json.loads(out)["data"]["text"] == said  # the same JSON value, escaped


def test_a_run_id_too_long_for_a_file_name_keeps_its_events_apart_from_a_like_one(tmp_path):
    """A workflow id may have 1,000 characters: quoted whole it was a file name over 255
    bytes, and the live page could not open the run."""
    long_a, long_b = "r" * 600 + "-a", "r" * 600 + "-b"
    one = EventLog(long_a, tmp_path)
    first = picture(task("1"))
    one.add(diff_pictures(None, first))
    one.keep(first)
    assert [e.id for e in EventLog(long_a, tmp_path).events] == [1]
    assert EventLog(long_b, tmp_path).events == []  # another run, another file
    assert all(len(p.name.encode()) <= 255 for p in tmp_path.iterdir())
