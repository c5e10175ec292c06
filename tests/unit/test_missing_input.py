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
