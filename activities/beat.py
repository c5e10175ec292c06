"""Heartbeats while an activity works: one background loop for every activity that needs one.

The interval comes from the activity's own heartbeat timeout (``activity.info()``), a quarter
of it (2.5 s for the default 10 s): whoever schedules the activity sets one number, and no
other travels beside it. A quarter, not sdk-python's half (``contrib/openai_agents``), so that
the server's last heartbeat of a worker that died or stopped is at most a quarter of the
timeout old: a lost attempt is noticed at least ¾ of the timeout after the loss, which the
sandbox's liveness watchdog (``activities/sandbox/liveness.py``) relies on. The worker sends
the beats on at most every ``THROTTLE`` seconds (``worker.py``), not the SDK's 80 % of the
timeout, for the same reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

from temporalio import activity

FLOOR = 0.2  # never more often than this many seconds, however short the timeout
THROTTLE = 2.0  # seconds: the most a heartbeat waits in the worker before it goes to the server


def interval() -> float | None:
    """Seconds between heartbeats: a quarter of the activity's heartbeat timeout (at least
    ``FLOOR``); None when it has none (a local activity: its workflow task is its liveness)."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        return None
    return max(FLOOR, timeout.total_seconds() / 4)


def heartbeat(note: object) -> None:
    """Heartbeat, except in a local activity (the leader runs cheap tools so: the workflow
    task it belongs to is its liveness)."""
    if not activity.info().is_local:
        activity.heartbeat(note)


@contextlib.asynccontextmanager
async def heartbeating(
    note: object | Callable[[], object] = "working",
    *,
    every: float | None = None,
    also: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[None]:
    """Heartbeat in the background while the body runs: every ``every`` seconds (default
    :func:`interval`), with ``note`` (or what it returns then). ``also`` (an agent's progress
    reports) is awaited at the start and after each heartbeat. No timeout and no ``every``:
    nothing to do."""
    period = interval() if every is None else every
    if period is None:
        yield
        return

    async def loop() -> None:
        while True:
            if also is not None:
                await also()
            await asyncio.sleep(period)
            heartbeat(note() if callable(note) else note)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def deadline(margin: float, default: float) -> float:
    """The monotonic time by which a wait inside the activity must end: its start-to-close
    timeout less ``margin`` seconds for what the attempt still has to do (at least now);
    ``default`` seconds from now outside an activity or without that timeout."""
    try:
        info = activity.info()
    except RuntimeError:
        return time.monotonic() + default
    timeout = info.start_to_close_timeout
    if not timeout:
        return time.monotonic() + default
    started = info.started_time or datetime.now(UTC)
    left = (started + timeout - timedelta(seconds=margin) - datetime.now(UTC)).total_seconds()
    return time.monotonic() + max(0.0, left)
