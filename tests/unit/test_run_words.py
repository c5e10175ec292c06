"""How a run's end is said: in xsky's words, each once."""

from __future__ import annotations

import io

from rich.console import Console
from temporalio.client import WorkflowExecutionStatus

from cli.board import results_table
from client.outcome import _status_name
from xsky.runs import RunResult


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
