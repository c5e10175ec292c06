"""Temporal core's log lines in the worker's log, with its retries held back.

While the server does not answer (stopped, moved to another address, the network down), core
warns of every gRPC call it tries again — each poller, each worker heartbeat: a worker's log got
1,028 such lines in three minutes after its server was killed and moved (chaos14; ~260 MB a
day), with ANSI colours in a file and no line saying what it meant. Here the first retry line of
an outage is said with what it means and what to do, then one a minute with how many were held
back; every other core line passes as it is.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import datetime

# Core's lines that only say a call to the server is tried again (its retry layer, and the
# worker heartbeat's own error).
RETRY = re.compile(
    r"gRPC call \w+ retried \d+ times|Network error while sending worker heartbeat", re.IGNORECASE
)
# Seconds between two retry lines shown in one outage.
EVERY = 60.0
# Seconds without a retry line after which the next one begins a new outage.
QUIET = 30.0


class HeldRetries(logging.Filter):
    """A filter for the logger core's lines are forwarded to (``temporalio.core``)."""

    def __init__(
        self,
        address: str,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = datetime.now,
    ) -> None:
        super().__init__()
        self.address = address
        self.every = every
        self.clock = clock
        self.wall = wall
        self.since: datetime | None = None  # when this outage's first retry line came
        self.last_seen = 0.0
        self.last_said: float | None = None
        self.held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()  # (core's target, message and fields)
        if not RETRY.search(text):
            return True
        now = self.clock()
        if self.since is None or now - self.last_seen > QUIET:
            self.since, self.last_said, self.held = self.wall(), None, 0
        self.last_seen = now
        if self.last_said is not None and now - self.last_said < self.every:
            self.held += 1
            return False
        first = self.last_said is None
        self.last_said = now
        held = (
            ""
            if first
            else f"; {self.held} more such line{'' if self.held == 1 else 's'} held back"
        )
        self.held = 0
        since = self.since.strftime("%H:%M:%S") if self.since is not None else "now"
        record.msg = (
            f"Temporal at {self.address} does not answer (since {since}{held}; one such line a "
            "minute is shown): runs wait and go on when it answers again; if the server moved, "
            f"restart this worker with its new TEMPORAL_ADDRESS — core said: {text}"
        )
        record.args = ()
        return True
