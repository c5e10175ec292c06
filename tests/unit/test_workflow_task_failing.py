"""A run whose workflow task fails on the worker at every try (an error in workflow code, or code
changed under a running worker) is said so — not "the 1 worker(s) serving 'xsky' are busy …;
ask again in a moment", which asking again never mends."""

from __future__ import annotations

from typing import Any

import pytest

from client import workers
from xsky.config import load_settings
from xsky.errors import WorkersBusyError

PROBLEM = "Unable to query workflow due to Workflow Task in failed state."


async def test_a_failing_workflow_task_is_not_called_busy_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def one_live_poller(*_: Any) -> tuple[list[Any], int]:
        return [], 1  # the server lists a poller: the queue is served

    monkeypatch.setattr(workers, "_workers_and_pollers", one_live_poller)
    why = await workers.unanswered(None, load_settings(), "run-1", "xsky", PROBLEM)  # type: ignore[arg-type]
    assert not isinstance(why, WorkersBusyError), why
    assert "workflow task fails on the worker" in why.fact and "ask again" not in str(why)
    assert why.fix is not None and "worker's log" in why.fix and "restarted" in why.fix

    # Busy workers are still said to be busy.
    busy = await workers.unanswered(None, load_settings(), "run-1", "xsky", "deadline exceeded")  # type: ignore[arg-type]
    assert isinstance(busy, WorkersBusyError), busy
