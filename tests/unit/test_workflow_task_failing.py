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


async def test_a_frozen_worker_the_server_no_longer_sees_polling_is_stopped_not_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker SIGSTOPped stops polling: a moment later the server answers a query "no poller
    seen", which was read as no worker at all ("start one") — the frozen one may come back."""
    from xsky.errors import NoWorkerError, WorkerStoppedError

    frozen = workers.SeenWorker(identity="w@host", silent=90.0, free_slots=4)
    ended = workers.SeenWorker(identity="w@host", silent=2.0, free_slots=4, stopping=True)

    def seeing(*seen: Any) -> Any:
        async def answer(*_: Any) -> tuple[list[Any], int]:
            return list(seen), 0

        return answer

    problem = "no poller seen for task queue recently"
    monkeypatch.setattr(workers, "_workers_and_pollers", seeing(frozen))
    why = await workers.unanswered(None, load_settings(), "run-1", "xsky", problem)  # type: ignore[arg-type]
    assert isinstance(why, WorkerStoppedError) and "stopped answering" in why.fact, why
    monkeypatch.setattr(workers, "_workers_and_pollers", seeing(ended))  # it shut down
    why = await workers.unanswered(None, load_settings(), "run-1", "xsky", problem)  # type: ignore[arg-type]
    assert isinstance(why, NoWorkerError) and "no worker serves" in why.fact, why
