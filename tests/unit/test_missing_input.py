"""What a query or update handler needs that a call without input lacks (workflows/missing_input.py),
read through the SDK's own binding of handlers to their workflow: a release that binds them
differently fails here rather than letting the stock CLI's bare calls answer TypeErrors again."""

from __future__ import annotations

from temporalio.workflow._handlers import _bind_method

from workflows.leader import LeaderWorkflow
from workflows.missing_input import needed_input


def test_needed_input_reads_async_and_sync_handlers_as_the_sdk_binds_them():
    run = LeaderWorkflow.__new__(LeaderWorkflow)
    bound = lambda fn: _bind_method(run, fn)  # noqa: E731
    assert needed_input(bound(LeaderWorkflow.nudge_task)) == (
        '--input \'{"taskId": …, "message": …}\''
    )
    assert needed_input(bound(LeaderWorkflow.nudges)) == "--input '{\"taskId\": …}'"
    # nothing needed: no argument, or an optional one
    assert needed_input(bound(LeaderWorkflow.pending_requests)) is None
    assert needed_input(bound(LeaderWorkflow.task_board)) is None
    assert needed_input(None) is None


def test_every_update_has_a_validator_so_a_call_without_input_is_refused_before_acceptance():
    """The SDK asks the interceptor only of an update that has a validator; one without it
    takes a call without its input, then fails its workflow task on the TypeError after
    accepting it (review17: the skill entity's remove_candidate)."""
    import ast
    from pathlib import Path

    missing, seen = [], 0
    for path in sorted(Path("workflows").rglob("*.py")):
        tree = ast.parse(path.read_text())
        updates, validated = [], set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for dec in node.decorator_list:
                    text = ast.unparse(dec)
                    if text.startswith("workflow.update"):
                        updates.append(node.name)
                    if text.endswith(".validator"):
                        validated.add(text.split(".")[0])
        missing += [f"{path}:{u}" for u in updates if u not in validated]
        seen += len(updates)
    assert seen > 10, "too few updates found: the test reads the wrong folder"
    assert missing == [], missing


def test_pause_run_and_resume_run_without_input_take_the_empty_request_others_still_ask():
    """walk11: `temporal workflow update execute --name resume_run` was refused, saying it needs
    --input '{"reason": …}', though the resume signal takes no input."""
    from workflows.missing_input import empty_request
    from xsky.leader.state import PauseRequest, ResumeRequest

    run = LeaderWorkflow.__new__(LeaderWorkflow)
    bound = lambda fn: _bind_method(run, fn)  # noqa: E731
    assert empty_request("resume_run", bound(LeaderWorkflow.resume_run)) == ResumeRequest()
    assert empty_request("pause_run", bound(LeaderWorkflow.pause_run)) == PauseRequest()
    # a bare end_run would end the run; a bare nudge_task has nothing to send
    assert empty_request("end_run", bound(LeaderWorkflow.end_run)) is None
    assert empty_request("nudge_task", bound(LeaderWorkflow.nudge_task)) is None
