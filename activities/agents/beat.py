"""Liveness and progress of one agent attempt: heartbeats to Temporal while the agent works,
and throttled progress reports to the leader (which runs the stall ladder on them)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from temporalio import activity

from activities.beat import heartbeat, heartbeating, interval
from xsky.plan.budget import UsageReport
from xsky.runs import PROGRESS_CHARS, ProgressReport

log = logging.getLogger("xsky.agents")

# An attempt that works this long tells the leader it started (quicker ones report only their end).
START_REPORT_AFTER = 1.0
# How long a stopped attempt tries to tell the leader what it used.
FINAL_REPORT_SECONDS = 5.0


class Beat:
    """Liveness and progress for one attempt.

    Heartbeats (liveness, to Temporal) go out in the background while the agent works, as
    often as :func:`activities.beat.interval` says (a quarter of the activity's
    heartbeat timeout), or more often for the reports. Progress reports (to the leader, which runs the
    stall ladder on them) are signals, throttled to one per ``progress_interval``; the first,
    "started" with the attempt's real start time, goes out once the agent has worked for
    ``START_REPORT_AFTER`` (at once for a retry), so quick agents cost no signal and the board
    shows the rest.
    """

    def __init__(
        self,
        *,
        task_id: str,
        dispatch: int,
        progress_interval: float,
        started_at: datetime | None = None,
        previous: str | None = None,
        token: str | None = None,
        host: str | None = None,
    ):
        self.task_id = task_id
        self.token = token  # the dispatch's: the leader takes reports that carry it only
        self.host = host  # this worker's host, shown on the board
        self.dispatch = dispatch
        self.progress_interval = progress_interval
        self.started_at = started_at
        self.previous = previous  # how the attempt before this one ended
        self.note = "working"
        self.started_sent = False
        self.pending = False  # progress made since the last report
        self.last_report = float("-inf")
        self.iteration = 0
        self.tokens = 0
        self.usage: UsageReport | None = None  # what the conversation has used (model agents)
        self.nudges_seen = 0
        self._retry_shown = False
        self._since = 0.0  # when running() began (the event loop's clock)

    def __call__(self, note: str) -> None:
        self.note = note
        heartbeat(note)

    def progress(self, note: str) -> None:
        self.note = note
        self.pending = True
        heartbeat(note)

    async def _send(self, progress: bool, final: bool = False) -> None:
        info = activity.info()
        report = ProgressReport(
            task_id=self.task_id,
            dispatch=self.dispatch,
            message=self.note[:PROGRESS_CHARS],
            iteration=self.iteration,
            tokens=self.tokens,
            activity_attempt=info.attempt,
            nudges_seen=self.nudges_seen,
            progress=progress,
            started_at=self.started_at,
            previous=self.previous,
            usage=self.usage,
            final=final,
            token=self.token,
            host=self.host,
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
            log.warning("could not report progress of %s: %s", self.task_id, e)

    async def final(self, usage: UsageReport) -> None:
        """The attempt was stopped (cancelled): what its conversation used, told once more, so
        the leader settles it (a cancelled activity's end carries no details)."""
        if usage.total.empty():
            return
        self.usage = usage
        try:
            await asyncio.wait_for(self._send(progress=False, final=True), FINAL_REPORT_SECONDS)
        except TimeoutError:
            log.warning(
                "the last usage report of %s took too long; the leader estimates it", self.task_id
            )

    async def flush(self) -> None:
        """Send a pending progress report now, unless one went out too recently."""
        loop = asyncio.get_running_loop()
        if self.pending and loop.time() - self.last_report >= self.progress_interval:
            self.pending = False
            self.started_sent = True
            self.last_report = loop.time()
            await self._send(progress=True)

    async def _report(self) -> None:
        """At the start and after each heartbeat: what the leader should hear now, if anything."""
        if self.previous is not None and not self._retry_shown:
            self._retry_shown = True  # a retry: the board shows it (and why) at once
            self.started_sent = True
            await self._send(progress=False)
        elif self.pending:
            await self.flush()
        elif (
            not self.started_sent
            and asyncio.get_running_loop().time() - self._since >= START_REPORT_AFTER
        ):
            self.started_sent = True
            await self._send(progress=False)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        every = interval()
        tick = min(t for t in (every, self.progress_interval, START_REPORT_AFTER) if t is not None)
        self._since = asyncio.get_running_loop().time()
        async with heartbeating(lambda: self.note, every=max(0.05, tick), also=self._report):
            yield
