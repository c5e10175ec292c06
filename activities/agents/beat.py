"""Liveness and progress of one agent attempt: heartbeats to Temporal while the agent works,
and throttled progress reports to the leader (which runs the stall ladder on them)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime

from temporalio import activity

from xsky.runs import AgentInput, ProgressReport

log = logging.getLogger("xsky.agents")

# An attempt that works this long tells the leader it started (quicker ones report only their end).
START_REPORT_AFTER = 1.0


def _heartbeat(note: str) -> None:
    """Heartbeat, except in a local activity (the leader runs cheap tools so: the workflow
    task it belongs to is its liveness)."""
    if not activity.info().is_local:
        activity.heartbeat(note)


class Beat:
    """Liveness and progress for one attempt.

    Heartbeats (liveness, to Temporal) go out in the background while the agent works.
    Progress reports (to the leader, which runs the stall ladder on them) are signals,
    throttled to one per ``progress_interval``; the first, "started" with the attempt's
    real start time, goes out once the agent has worked for ``START_REPORT_AFTER`` (at
    once for a retry), so quick agents cost no signal and the board shows the rest.
    """

    def __init__(
        self, inp: AgentInput, started_at: datetime | None = None, previous: str | None = None
    ):
        self.inp = inp
        self.started_at = started_at
        self.previous = previous  # how the attempt before this one ended
        self.note = "working"
        self.started_sent = False
        self.pending = False  # progress made since the last report
        self.last_report = float("-inf")
        self.iteration = 0
        self.tokens = 0
        self.nudges_seen = 0

    def __call__(self, note: str) -> None:
        self.note = note
        _heartbeat(note)

    def progress(self, note: str) -> None:
        self.note = note
        self.pending = True
        _heartbeat(note)

    async def _send(self, progress: bool) -> None:
        info = activity.info()
        report = ProgressReport(
            task_id=self.inp.task_id,
            dispatch=self.inp.dispatch,
            message=self.note,
            iteration=self.iteration,
            tokens=self.tokens,
            activity_attempt=info.attempt,
            nudges_seen=self.nudges_seen,
            progress=progress,
            started_at=self.started_at,
            previous=self.previous,
        )
        if info.workflow_id is None:  # not scheduled by a leader: nobody to tell
            return
        try:
            await (
                activity.client()
                .get_workflow_handle(info.workflow_id)
                .signal("report_progress", report)
            )
        except Exception as e:  # noqa: BLE001 - progress is best effort; the work goes on
            log.warning("could not report progress of %s: %s", self.inp.task_id, e)

    async def flush(self) -> None:
        """Send a pending progress report now, unless one went out too recently."""
        loop = asyncio.get_running_loop()
        if self.pending and loop.time() - self.last_report >= self.inp.progress_interval:
            self.pending = False
            self.started_sent = True
            self.last_report = loop.time()
            await self._send(progress=True)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async def loop() -> None:
            tick = max(
                0.05,
                min(self.inp.heartbeat_interval, self.inp.progress_interval, START_REPORT_AFTER),
            )
            waited = 0.0
            if self.previous is not None:  # a retry: the board shows it (and why) at once
                self.started_sent = True
                await self._send(progress=False)
            while True:
                await asyncio.sleep(tick)
                waited += tick
                _heartbeat(self.note)
                if self.pending:
                    await self.flush()
                elif not self.started_sent and waited >= START_REPORT_AFTER:
                    self.started_sent = True
                    await self._send(progress=False)

        task = asyncio.create_task(loop())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
