"""A run whose workflow task fails at every try: the advice names the reset that lets a run
stuck on the SDK's nondeterminism error (after a worker was lost while it was queried) go on —
it said only to restart the worker or fix workflow code (chaos12)."""

from __future__ import annotations

from typing import Any

from client.workers import TASK_FAILING, unanswered
from xsky.config import load_settings
from xsky.errors import WorkflowTaskFailingError


async def test_a_failing_workflow_task_is_told_how_to_go_on() -> None:
    client: Any = None  # (not asked: the server's word says it all)
    error = await unanswered(
        client, load_settings({}), "run-7", "xsky", f"query failed: {TASK_FAILING}"
    )
    assert isinstance(error, WorkflowTaskFailingError)
    assert "fails on the worker at every try" in error.fact
    assert "temporal workflow reset -w run-7 --event-id N" in error.fix, error.fix
