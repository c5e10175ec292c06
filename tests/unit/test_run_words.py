"""How a run's end is said: in xsky's words, each once."""

from __future__ import annotations

import io

from rich.console import Console
from temporalio.client import WorkflowExecutionStatus

from cli.board import results_table
from client.described import status_name as _status_name
from xsky.runs import AgentReport, RunResult


def test_temporals_statuses_in_xskys_words():
    assert _status_name(WorkflowExecutionStatus.CANCELED) == "cancelled"  # as results say it
    assert _status_name(WorkflowExecutionStatus.TIMED_OUT) == "timed out"
    assert _status_name(WorkflowExecutionStatus.RUNNING) == "running"
    assert _status_name(None) == "unknown"


def _shown(result: RunResult) -> str:
    out = io.StringIO()
    Console(file=out, width=120).print(results_table(result, read_artifact=None))
    return " ".join(out.getvalue().split())  # (the title wraps at the table's width)


def test_a_cancelled_runs_results_say_cancelled_once():
    result = RunResult(
        workflow_id="w", name="Steer", status="cancelled",
        summary="cancelled: 0 of 4 agents completed", agents=[],
    )  # fmt: skip
    assert "Steer — cancelled: 0 of 4 agents completed" in _shown(result)
    done = result.model_copy(update={"status": "completed", "summary": "4 of 4 agents completed"})
    assert "Steer — completed: 4 of 4 agents completed" in _shown(done)


def test_a_watchs_polls_say_what_they_saw_not_their_json():
    fired = '{"fired": true, "hash": "9f2c1e", "text": "3 new messages"}'
    quiet = '{"fired": false, "hash": "9f2c1e", "why": "no change within 60s"}'
    result = RunResult(
        workflow_id="w", name="Watch", status="completed", summary="3 of 3 agents completed",
        agents=[
            AgentReport(id="w.poll[1]", task_id="T-w.poll[1]", name="llm", status="completed", result=fired),
            AgentReport(id="w.poll[2]", task_id="T-w.poll[2]", name="llm", status="completed", result=quiet),
            # a poll a person skipped keeps what they said; another agent's JSON is its own
            AgentReport(id="w.poll[3]", task_id="T-w.poll[3]", name="llm", status="completed", result="the page moved"),
            AgentReport(id="x", task_id="T-x", name="llm", status="completed", result=fired),
        ],
    )  # fmt: skip
    shown = _shown(result)
    assert "T-w.poll[1] │ completed │ changed — now: 3 new messages" in shown
    assert "T-w.poll[2] │ completed │ did not fire: no change within 60s" in shown
    assert "T-w.poll[3] │ completed │ the page moved" in shown
    assert shown.count("9f2c1e") == 1  # T-x's own result, as it answered
