"""Limits and timings shared by the client's modules."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

from temporalio.api.enums.v1 import WorkflowExecutionStatus as ExecutionStatus
from temporalio.service import RPCStatusCode

QUERY_TIMEOUT = timedelta(seconds=5)
# A change (an update) goes through a workflow task: seconds on a loaded server with a large
# run to replay; past this it is said to be sent and waiting, not to have failed.
UPDATE_TIMEOUT = timedelta(seconds=20)
# A worker that was just started (`starter.py up`) may take a moment to poll.
WORKER_WAIT = 10.0
# The failure types a leader ends with when it has a RunResult to give.
OUTCOME_TYPES = ("RunFailed", "RunCancelled")
# A poller seen within this many seconds is a live worker (long polls last about a minute).
LIVE_POLLER_SECONDS = 75
# A live worker takes a new run's first workflow task at once (its pollers wait on the queue);
# one that has not within this many seconds after the start is not polling, whatever the
# server's list of recent pollers says.
PICKUP_WAIT = 5.0
# Following a run: say so when an agent's first attempt has waited this long for a worker to
# take it (none of its kind polls, whatever the server's poller list says).
UNTAKEN_SECONDS = 10.0
# A worker whose heartbeats (every 3 s: activities/telemetry.py) stopped this long ago has
# stopped answering (stopped, frozen, cut off), though the server still lists it as running.
WORKER_SILENT_SECONDS = 10.0
# A query the workers are too busy to answer is asked this many times (a second apart).
QUERY_TRIES = 3
# Following a run: say so when no worker has answered the board query for this long.
SILENT_WORKER_SECONDS = 15
# Server trouble worth waiting out while following a run. RESOURCE_EXHAUSTED: "Workflow is
# busy." (the server could not take the run's lock in time: a large workflow task being
# written on a loaded machine) or a rate limit — a following `starter.py run` gave up on a
# run that went on and completed.
TRANSIENT = (
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.CANCELLED,
    RPCStatusCode.UNKNOWN,
    RPCStatusCode.RESOURCE_EXHAUSTED,
)

RUNNING_STATUS = ExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")

Decision = Literal["allow_once", "allow_run", "deny"]
