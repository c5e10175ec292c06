"""Pure pieces of the leader: the stall ladder, loop detection, plan merging, the board."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from xsky.leader.replan import merge_plan, new_task
from xsky.leader.stall import LoopDetector, seconds_to_next_step, stall_step
from xsky.leader.state import ReplanRequest
from xsky.leader.tasks import TaskState, board_markdown, derive_statuses
from xsky.plan.agent_config import StallWindows, config_problems, stall_windows
from xsky.plan.models import Workflow, WorkflowAgent

W = StallWindows(nudge_after=180, restart_after=420)


@pytest.mark.parametrize(
    "level, idle, can_replan, expected",
    [
        (0, 100, True, None),
        (0, 180, True, "nudge"),
        (1, 300, True, None),
        (1, 420, True, "restart"),
        (2, 419, True, None),
        (2, 420, True, "replan"),
        (2, 420, False, "escalate"),
        (3, 10_000, True, None),
    ],
)
def test_the_stall_ladder_tiers(level, idle, can_replan, expected):
    assert stall_step(level, idle, W, can_replan) == expected


def test_a_disabled_ladder_never_acts():
    assert stall_step(0, 10_000, W.model_copy(update={"enabled": False}), True) is None


def test_seconds_to_next_step():
    assert seconds_to_next_step(0, 100, W) == 80
    assert seconds_to_next_step(1, 100, W) == 320
    assert seconds_to_next_step(3, 100, W) is None


def test_stall_windows_must_be_ordered():
    with pytest.raises(ValueError, match="restartAfter must be longer"):
        StallWindows(nudge_after=10, restart_after=5)


def test_an_agent_config_can_switch_the_ladder_off_or_change_windows():
    assert stall_windows({"stall": False}, W).enabled is False
    custom = stall_windows({"stall": {"nudgeAfter": 5, "restartAfter": 9}}, W)
    assert (custom.nudge_after, custom.restart_after) == (5, 9)
    assert stall_windows(None, W) is W
    assert config_problems({"stall": "never"}) == [
        'config stall must be false or an object such as {"nudgeAfter": 180, "restartAfter": 420}'
    ]
    assert (
        "restartAfter must be longer"
        in config_problems({"stall": {"nudgeAfter": 9, "restartAfter": 5}})[0]
    )


def test_loop_detector_nudges_at_three_and_stops_at_five_identical_calls():
    d = LoopDetector()
    calls = [d.observe("shell", {"command": "ls"}) for _ in range(5)]
    assert calls == [None, None, "nudge", None, "stop"]


def test_loop_detector_counts_only_calls_in_a_row_with_the_same_arguments():
    d = LoopDetector()
    seq = [
        ("shell", {"command": "ls"}),
        ("shell", {"command": "ls"}),
        ("file_read", {"path": "a"}),
        ("shell", {"command": "ls"}),
        ("shell", {"command": "ls -a"}),
    ]
    assert [d.observe(t, a) for t, a in seq] == [None] * 5
    assert LoopDetector.key("t", {"b": 1, "a": 2}) == LoopDetector.key("t", {"a": 2, "b": 1})


def agent(agent_id: str, depends: str = "", task: str = "") -> WorkflowAgent:
    return WorkflowAgent(
        id=agent_id,
        name="llm",
        task=task or f"task {agent_id}",
        depends=[d for d in depends.split(",") if d],
    )


def board(wf: Workflow, **stored: str) -> dict[str, TaskState]:
    tasks = {a.id: new_task(a, "run") for a in wf.agents}
    for agent_id, status in stored.items():
        tasks[agent_id].stored = status  # type: ignore[assignment]
    return tasks


def test_merge_keeps_completed_resets_failed_adds_and_removes():
    old = Workflow(
        name="p", task_id="t", agents=[agent("1"), agent("2", "1"), agent("3", "1"), agent("4")]
    )
    tasks = board(old, **{"1": "completed", "2": "failed", "3": "in_progress", "4": "in_progress"})
    tasks["1"].result = "kept"
    new = Workflow(
        name="p",
        task_id="t",
        agents=[agent("1"), agent("2", "1"), agent("3", "1", task="changed"), agent("5", "1")],
    )
    change = merge_plan(old, tasks, new, "run")
    by_id = {t.agent_id: t for t in change.tasks}
    assert [t.agent_id for t in change.tasks] == ["1", "2", "3", "5"]
    assert by_id["1"].stored == "completed" and by_id["1"].result == "kept"
    assert by_id["2"].stored == "pending" and change.reset == ["2"]
    assert change.stop == ["3", "4"] and change.restarted == ["3"]
    assert [t.agent_id for t in change.removed] == ["4"] and change.added == ["5"]
    assert by_id["3"].description == "changed"
    assert change.summary() == "added 5; removed 4; restarting 3; retrying 2"


def test_the_reply_names_waiting_tasks_redefined_and_done_ones_that_keep_their_result():
    # The plan's history says what it always said; the person who replanned is told too that
    # 2 runs as redefined, and that 1, done, keeps its result although its command changed.
    old = Workflow(name="p", task_id="t", agents=[agent("1"), agent("2", "1"), agent("3", "1")])
    tasks = board(old, **{"1": "completed"})
    new = Workflow(
        name="p",
        task_id="t",
        agents=[agent("1", task="again"), agent("2", "1", task="other"), agent("3"), agent("4")],
    )
    change = merge_plan(old, tasks, new, "run")
    assert change.changed == ["2", "3"] and change.kept == ["1"]  # (3: its dependencies)
    assert change.summary() == "added 4"
    assert change.reply() == (
        "added 4; changed 2, 3; kept 1 as done (a new definition of a done agent does not run: "
        "give it a new id to run it)"
    )
    same = merge_plan(new, board(new), new, "run")
    assert same.changed == same.kept == [] and same.reply() == "no task changed"


def test_a_replan_that_changes_only_an_agents_steps_or_loop_restarts_it():
    from xsky.plan.models import Step

    old = Workflow(name="p", task_id="t", agents=[agent("1"), agent("2")])
    tasks = board(old, **{"1": "in_progress", "2": "in_progress"})
    new = Workflow(
        name="p",
        task_id="t",
        agents=[
            agent("1").model_copy(update={"steps": [Step(text="a new first step")]}),
            agent("2").model_copy(update={"for_each": "{{topics}}"}),
        ],
    )
    assert merge_plan(old, tasks, new, "run").restarted == ["1", "2"]


def test_merge_withdraws_a_question_when_its_task_changes_or_goes():
    old = Workflow(name="p", task_id="t", agents=[agent("1"), agent("2")])
    tasks = board(old)
    tasks["1"].waiting_on, tasks["2"].waiting_on = "Q-1", "Q-2"
    new = Workflow(name="p", task_id="t", agents=[agent("1", task="different")])
    change = merge_plan(old, tasks, new, "run")
    assert (
        sorted(change.withdrawn_requests) == ["Q-1", "Q-2"] and change.tasks[0].waiting_on is None
    )


def test_derived_statuses_block_every_descendant_of_a_failure_and_of_a_question():
    wf = Workflow(
        name="p",
        task_id="t",
        agents=[agent("1"), agent("2", "1"), agent("3", "2"), agent("4"), agent("5", "4")],
    )
    tasks = board(wf, **{"1": "failed"})
    tasks["4"].waiting_on = "Q-1"
    derived = derive_statuses({t.id: t for t in tasks.values()})
    assert derived["T-2"] == ("blocked", "T-1 failed")
    assert derived["T-3"] == ("blocked", "T-2 blocked")
    assert derived["T-4"] == ("blocked", "waiting for request Q-1")
    assert derived["T-5"] == ("blocked", "T-4 blocked")


def test_the_markdown_board_shows_each_task_and_a_tally():
    wf = Workflow(name="p", task_id="t", agents=[agent("1"), agent("2", "1")])
    tasks = board(wf, **{"1": "completed"})
    now = datetime(2026, 1, 1, tzinfo=UTC)
    tasks["1"].dispatched_at, tasks["1"].ended_at = now - timedelta(seconds=3), now
    md = board_markdown("Plan", list(tasks.values()), now, "footer note")
    lines = md.splitlines()
    assert lines[0] == "**Plan** · RUNNING · 1 completed, 1 pending"
    assert lines[2:7] == [
        "```text",
        "task  agent  status       duration  tries  subject",
        "T-1   llm    + completed  3.0s      0      task 1",
        "T-2   llm    . pending    –         0      task 2",
        "```",
    ]
    assert md.endswith("footer note")


def test_a_running_task_on_the_board_says_since_when_in_hours_minutes_and_seconds():
    wf = Workflow(name="p", task_id="t", agents=[agent("1"), agent("2")])
    tasks = board(wf, **{"1": "in_progress", "2": "dispatched"})
    now = datetime(2026, 1, 1, 9, 5, 7, tzinfo=UTC)
    tasks["1"].started_at = datetime(2026, 1, 1, 8, 4, 3, 120_000, tzinfo=UTC)
    tasks["2"].dispatched_at = datetime(2026, 1, 1, 23, 59, 59, tzinfo=UTC)
    lines = board_markdown("Plan", list(tasks.values()), now).splitlines()
    assert "since 08:04:03" in lines[4]
    assert "since 23:59:59" in lines[5]


def test_a_board_drawn_again_shows_what_changed_and_only_that():
    # Rows are remembered between drawings (a board is drawn after every workflow task).
    wf = Workflow(name="p", task_id="t", agents=[agent(str(i), "", f"task {i}") for i in range(4)])
    tasks = board(wf, **{"0": "completed", "1": "in_progress", "2": "failed", "3": "pending"})
    now = datetime(2026, 1, 1, 9, tzinfo=UTC)
    tasks["0"].dispatched_at, tasks["0"].ended_at = now - timedelta(seconds=2), now
    tasks["1"].started_at = now - timedelta(seconds=5)
    tasks["2"].error = "the first error"
    first = board_markdown("Plan", list(tasks.values()), now).splitlines()
    tasks["1"].stored, tasks["1"].ended_at = "completed", now
    tasks["2"].error = "another error"
    tasks["3"].description = "a new subject"
    again = board_markdown("Plan", list(tasks.values()), now).splitlines()
    assert again[0] == "**Plan** · RUNNING · 2 completed, 1 failed, 1 pending"
    assert first[4].split() == again[4].split()  # unchanged (its column widths may move)
    assert "since 08:59:55" in first[5] and "5.0s" in again[5]
    assert "a new subject" in again[7] and "task 3" in first[7]
    assert "- **T-2** another error" in again and "- **T-2** the first error" in first


def test_the_board_keeps_its_columns_in_line_and_its_notes_whole_and_says_paused_first():
    wf = Workflow(name="p", task_id="t", agents=[agent("1"), agent("2", "1")])
    tasks = board(wf, **{"1": "failed"})
    now = datetime(2026, 1, 1, tzinfo=UTC)
    why = "the page at https://example.com/a/very/long/path answered 503 " * 4
    tasks["1"].error = why
    tasks["2"].assigned_agent = "数据"  # wide characters: two columns each
    lines = board_markdown("Plan", list(tasks.values()), now, "", "paused").splitlines()
    assert lines[0].startswith("**Plan** · PAUSED · ")
    header, first, second = lines[3:6]
    # the status column starts at one screen column in every row
    assert header.index("status") == first.index("! failed") == second.index("# blocked") + 2
    # each note under the table, whole (a last column was cut at 80, and ran off the pane)
    assert lines[8:10] == [f"- **T-1** {' '.join(why.split())}", "- **T-2** T-1 failed"]


def test_replan_request_needs_exactly_one_of_prompt_and_xml():
    assert ReplanRequest(prompt="x").problem() is None
    assert ReplanRequest(xml="<workflow/>").problem() is None
    assert "either prompt" in ReplanRequest().problem()
    assert "either prompt" in ReplanRequest(prompt="x", xml="<w/>").problem()


def test_a_call_run_again_as_its_attempt_resumes_is_not_one_more_repeat():
    """The loop detector counted each resume of one call (after a question, an approval, a lost
    worker) as a repeat by the model: the third resume told the model "you have made this same
    call 3 times in a row" (test_mcp_recovery under load)."""
    from activities.agents.checkpoint import Checkpoint
    from activities.agents.loop import observed

    cp = Checkpoint(messages=[], iteration=1)
    call = {"id": "call_1", "name": "shell", "arguments": '{"command": "ls"}'}
    for _ in range(4):  # the attempt, then three resumes of the same call of the same turn
        d = LoopDetector()
        d._last, d.repeats = cp.last_call, cp.repeats
        assert observed(d, cp, call, {"command": "ls"}) is None
    assert cp.repeats == 1
    # The model asking for it again in later turns is counted (the same id, as some servers
    # give every turn's first call, included).
    verdicts = []
    for turn in (2, 3):
        cp.iteration = turn
        verdicts.append(observed(d, cp, call, {"command": "ls"}))
    assert verdicts == [None, "nudge"] and cp.repeats == 3
    # Two identical calls in one turn are two calls: the 4th and the 5th, which stops it.
    cp.iteration = 4
    twice = [{**call, "id": "a"}, {**call, "id": "b"}]
    assert [observed(d, cp, c, {"command": "ls"}) for c in twice] == [None, "stop"]
