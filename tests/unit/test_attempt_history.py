"""Why a task's attempts ended, as `status` shows it: read from the attempt ledgers the
agents' activity writes (activities/agents/ledger.py), with lost workers found by the gaps."""

from __future__ import annotations

from pathlib import Path

from activities.agents.key import AgentKey
from activities.agents.ledger import AttemptLedger
from activities.storage.local import LocalStore
from client.attempts import attempt_ends, retry_lines
from xsky.leader.tasks import TaskView

RUN, FIRST = "xsky-run-1", "0a1b2c3d-run"


def task(
    tid: str = "T-2", dispatch: int = 1, activity_attempt: int = 1, tries: int = 1
) -> TaskView:
    return TaskView(
        id=tid,
        agent_id=tid.removeprefix("T-"),
        session_id=RUN,
        subject="s",
        description="d",
        assigned_agent="shell",
        status="failed",
        attempt=dispatch,
        activity_attempt=activity_attempt,
        tries=tries,
        retries=["attempt 2 after a failed or lost attempt"],
    )


def ledger(root: Path, tid: str, dispatch: int, execution: str = FIRST) -> AttemptLedger:
    key = AgentKey(
        run_id=RUN,
        agent_id=tid.removeprefix("T-"),
        task_id=tid,
        execution_id=execution,
        plan_version=dispatch,
        dispatch=dispatch,
        checkpoint="checkpoint.json",
    )
    return AttemptLedger.of(LocalStore(root), key)


def test_every_ended_attempt_has_a_line_and_a_lost_worker_is_found_by_its_gap(tmp_path: Path):
    first = ledger(tmp_path, "T-2", 1)
    first.begin(1, 10)
    first.record(1, "error", "agent 2: the command exited with status 5: exit 5")
    first.begin(2, 10)  # attempt 2 lost its worker: it began, nothing ended it
    first.begin(3, 10)
    first.record(3, "error", "agent 2: the command exited with status 6: exit 6")
    # a later dispatch (a replan or `retry`) ran past its timeout, then is on attempt 2
    second = ledger(tmp_path, "T-2", 2)
    second.begin(1, 10)
    second.record(1, "timeout", "ran past its start-to-close timeout")
    second.begin(2, 10)  # running now: not an ended attempt
    # other tasks, other runs with this id, and T-22 are not T-2's
    ledger(tmp_path, "T-22", 1).record(1, "error", "not mine")
    ledger(tmp_path, "T-2", 1, execution="an-older-run").record(1, "error", "not mine either")

    row = task(dispatch=2, activity_attempt=1, tries=5)  # the board may not know attempt 2 yet
    lines = retry_lines(row, attempt_ends(LocalStore(tmp_path), RUN, FIRST, row))
    assert lines == [
        "attempt 1 (dispatch 1): error: agent 2: the command exited with status 5: exit 5",
        "attempt 2 (dispatch 1): worker lost: no heartbeat (killed, crashed, stopped or cut off)",
        "attempt 3 (dispatch 1): error: agent 2: the command exited with status 6: exit 6",
        "attempt 1 (dispatch 2): timeout: ran past its start-to-close timeout",
    ]


def test_a_running_retry_after_lost_workers_only_has_its_gaps(tmp_path: Path):
    ledger(tmp_path, "T-1", 1).record(1, "error", "someone else's")  # the run's folder exists
    row = task("T-2", dispatch=1, activity_attempt=3, tries=3)
    assert retry_lines(row, attempt_ends(LocalStore(tmp_path), RUN, FIRST, row)) == [
        "attempt 1: worker lost: no heartbeat (killed, crashed, stopped or cut off)",
        "attempt 2: worker lost: no heartbeat (killed, crashed, stopped or cut off)",
    ]


def test_without_a_readable_store_the_boards_notes_are_shown(tmp_path: Path):
    row = task(activity_attempt=2, tries=2)
    assert attempt_ends(LocalStore(tmp_path / "elsewhere"), RUN, FIRST, row) is None
    assert retry_lines(row, None) == ["attempt 2 after a failed or lost attempt"]


def test_an_earlier_dispatch_that_asked_a_person_says_so(tmp_path: Path):
    """After an approval or an answer the task is dispatched again: `status` said "2 attempts
    (why is not recorded)"; the first dispatch's kept outcome says it waited for a person."""
    from xsky.runs import AgentOutcome, RequestPayload

    asked = AgentOutcome(kind="needs_approval", request=RequestPayload(tool="shell"), attempt=1)
    ledger(tmp_path, "T-1", 1).complete(1, asked)
    ledger(tmp_path, "T-1", 2).complete(1, AgentOutcome(result="done", attempt=1))
    row = task("T-1", dispatch=2, activity_attempt=1, tries=2)
    assert retry_lines(row, attempt_ends(LocalStore(tmp_path), RUN, FIRST, row)) == [
        "dispatch 1: needs_approval: a tool call waited for a person's approval; "
        "dispatched again once decided"
    ]
    # the current dispatch's own kept outcome explains nothing (it is the task's end)
    only = task("T-1", dispatch=1, activity_attempt=1, tries=1)
    assert attempt_ends(LocalStore(tmp_path), RUN, FIRST, only) == []
