"""Are workers polling the queues a plan needs? (a run nobody runs waits silently).

Two checks, because the server's list of pollers cannot tell a live worker from one that
stopped a moment ago (both show the same last access: a live poller's long poll lasts up
to a minute). Before a start, :func:`require_workers`: a queue no poller has touched for
:data:`LIVE_POLLER_SECONDS` has no worker (wait a little, then refuse, nothing started).
After it, :func:`picked_up`: a live worker takes the run's first workflow task at once, so
one still waiting after :data:`PICKUP_WAIT` seconds means nobody polls that queue now
(an :class:`UnservedRunError`; the run stays started and begins once a worker comes).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import (
    PendingActivityState,
    PendingWorkflowTaskState,
    TaskQueueType,
    WorkerStatus,
)
from temporalio.api.taskqueue.v1 import PollerInfo, TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    DescribeWorkflowExecutionRequest,
    DescribeWorkflowExecutionResponse,
    ListWorkersRequest,
)
from temporalio.client import (
    Client,
)
from temporalio.service import RPCError

from client._consts import (
    LIVE_POLLER_SECONDS,
    PICKUP_WAIT,
    RUNNING_STATUS,
    UNTAKEN_SECONDS,
    WORKER_SILENT_SECONDS,
    WORKER_WAIT,
)
from xsky.config import Settings
from xsky.errors import (
    NoWorkerError,
    UnservedRunError,
    WorkersBusyError,
    WorkerStoppedError,
    WorkflowTaskFailingError,
    XSkyError,
)


async def live_pollers(
    client: Client, settings: Settings, queue: str, kind: TaskQueueType.ValueType
) -> list[PollerInfo]:
    """The pollers of ``queue`` whose worker is alive."""
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=settings.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        )
    )
    # The server lists a poller for minutes after its worker died; a live one polls again
    # at least every minute (a long poll), so only recent ones count.
    now = time.time()
    return [
        p
        for p in response.pollers
        if not p.HasField("last_access_time")
        or now - p.last_access_time.ToSeconds() < LIVE_POLLER_SECONDS
    ]


async def queue_pollers(
    client: Client, settings: Settings, queue: str, kind: TaskQueueType.ValueType
) -> int:
    return len(await live_pollers(client, settings, queue, kind))


async def missing_queues(client: Client, settings: Settings, kinds: list[str]) -> list[str]:
    """The queues a run needs that no worker polls: the leader's (workflow tasks) and each kind's."""
    wanted = [(settings.task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)]
    wanted += [(settings.kind_queue(k), TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY) for k in kinds]
    counts = await asyncio.gather(*(queue_pollers(client, settings, q, t) for q, t in wanted))
    return [q for (q, _), n in zip(wanted, counts, strict=True) if not n]


def no_worker_error(settings: Settings, missing: list[str]) -> NoWorkerError:
    if settings.task_queue in missing:  # nothing leads runs: a full worker serves every queue
        return NoWorkerError(
            f"no worker serves the task queue '{settings.task_queue}' at {settings.address}",
            "start one with `python worker.py`; nothing was started",
            topic="worker",
        )
    kinds = [q.removeprefix(settings.task_queue + "-") for q in missing]
    return NoWorkerError(
        f"no worker runs {', '.join(kinds)} agents (task queue{'s' if len(kinds) > 1 else ''} "
        f"{', '.join(repr(q) for q in missing)} at {settings.address}), which this plan needs",
        f"start one with `python worker.py --kinds {','.join(kinds)} --no-leader`; nothing was started",
        topic="worker-kinds",
        subject=",".join(kinds),
    )


async def require_workers(
    client: Client,
    settings: Settings,
    kinds: list[str],
    wait: float = WORKER_WAIT,
    on_wait: Any = None,
) -> None:
    """Return once workers poll every queue the run needs; a NoWorkerError with the fix otherwise."""
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            missing = await missing_queues(client, settings, kinds)
        except RPCError:
            return  # the server cannot say (an old server, no permission): start as before
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise no_worker_error(settings, missing)
        if not told and on_wait is not None:
            on_wait(f"waiting for a worker on {', '.join(missing)} …")
            told = True
        await asyncio.sleep(0.5)


async def picked_up(client: Client, workflow_id: str, wait: float = PICKUP_WAIT) -> bool:
    """Has a worker taken the workflow's first task within ``wait`` seconds of now — or is one
    busy with others on its queue? (True when it has ended, or the server cannot say.)"""
    deadline = time.monotonic() + wait
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    beats: dict[str, float] | None = None  # the queue's workers' last heartbeats, at first
    while True:
        try:
            response = await client.workflow_service.describe_workflow_execution(request)
        except RPCError:
            return True  # cannot tell; do not cry wolf
        if (
            response.workflow_execution_info.status != RUNNING_STATUS
            or not response.HasField("pending_workflow_task")
            or response.pending_workflow_task.state
            != PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED
            or response.workflow_execution_info.history_length > 2  # a task was done already
        ):
            return True
        queue = response.execution_config.task_queue.name
        if beats is None:
            beats = await beat_times(client, queue)
        if time.monotonic() >= deadline:
            if await polled_since_start(client, response):
                return True
            # A worker whose every workflow slot is taken (long workflow tasks: a large plan's
            # first, a loaded machine) does not poll, though alive — its heartbeats go on
            # (chaos14: a run started beside one 8 s task on a one-slot worker was said
            # unserved, "a worker the server still lists has stopped", and ran a moment later).
            # A heartbeat newer than the one at the start of the wait is a live worker's; the
            # times are compared as the worker sent them (no clock of two machines compared).
            now = await beat_times(client, queue)
            return any(beats.get(who, 0.0) < at for who, at in (now or {}).items())
        await asyncio.sleep(0.2)


async def beat_times(client: Client, queue: str) -> dict[str, float]:
    """The last heartbeat time (as the worker sent it) of each running worker of ``queue``;
    empty when the server lists none or cannot say."""
    try:
        response = await client.workflow_service.list_workers(
            ListWorkersRequest(namespace=client.namespace, page_size=1000)
        )
    except RPCError:
        return {}
    return {
        w.worker_heartbeat.worker_identity: w.worker_heartbeat.heartbeat_time.ToNanoseconds() / 1e9
        for w in response.workers_info
        if w.worker_heartbeat.task_queue == queue
        and w.worker_heartbeat.status == WorkerStatus.WORKER_STATUS_RUNNING
    }


async def polled_since_start(client: Client, described: DescribeWorkflowExecutionResponse) -> bool:
    """Has any worker polled the workflow's task queue since the workflow started? Under load
    (300 runs started at once) a first task waits its turn behind the others while the
    workers poll again as each task ends: a queue served, only busy. A worker that stopped
    before the start (however recently the server still lists it) cannot have polled since.
    Both times are the server's own."""
    started = described.workflow_execution_info.start_time.ToNanoseconds()
    queue = described.execution_config.task_queue.name
    try:
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
    except RPCError:
        return True  # cannot tell; do not cry wolf
    return any(
        p.HasField("last_access_time") and p.last_access_time.ToNanoseconds() > started
        for p in response.pollers
    )


def unserved_error(settings: Settings, queue: str, workflow_id: str, what: str) -> UnservedRunError:
    return UnservedRunError(
        f"no worker is polling the task queue '{queue}' at {settings.address}: none took "
        f"the first task of {what} {workflow_id} within {PICKUP_WAIT:g} s (a worker the server "
        "still lists has stopped)",
        f"start one with `python worker.py`; {workflow_id} is started and begins once a "
        "worker polls",
        topic="unserved",
        subject=workflow_id,
    )


def untaken(
    described: DescribeWorkflowExecutionResponse, now: float, after: float = UNTAKEN_SECONDS
) -> tuple[str, float] | None:
    """(task id, seconds) of the agent attempt that has waited longest, past ``after`` seconds,
    for a worker to take it: a first attempt, scheduled and never started (a worker of its
    kind would have taken it at once). None when there is none."""
    waits = [
        (a.activity_id.rsplit("-v", 1)[0], now - a.scheduled_time.ToSeconds())
        for a in described.pending_activities
        if a.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
        and a.attempt <= 1
        and not a.HasField("last_started_time")
        and a.HasField("scheduled_time")
    ]
    longest = max(waits, key=lambda w: w[1], default=None)
    return longest if longest is not None and longest[1] >= after else None


# -- why a run's query went unanswered ------------------------------------------------------------


_LISTED = (
    WorkerStatus.WORKER_STATUS_RUNNING,
    WorkerStatus.WORKER_STATUS_SHUTTING_DOWN,
    WorkerStatus.WORKER_STATUS_SHUTDOWN,
)


@dataclass(frozen=True)
class SeenWorker:
    """A worker the server lists for a task queue, from its worker heartbeats."""

    identity: str
    silent: float  # seconds since its last heartbeat reached the server
    free_slots: int | None  # workflow task slots free at its last heartbeat (None: not said)
    stopping: bool = False  # its last heartbeat said it was shutting down (or had)

    @property
    def gone(self) -> bool:
        return self.stopping or self.silent > WORKER_SILENT_SECONDS


async def workers_on(client: Client, namespace: str, queue: str) -> list[SeenWorker] | None:
    """The workers of ``queue`` by their heartbeats (running, or shutting down when last
    heard of); None when the server cannot say (an older server, no permission)."""
    try:
        response = await client.workflow_service.list_workers(
            ListWorkersRequest(namespace=namespace, page_size=1000)
        )
    except RPCError:
        return None
    now = time.time()
    seen = []
    for info in response.workers_info:
        beat = info.worker_heartbeat
        if beat.task_queue != queue or beat.status not in _LISTED:
            continue
        slots = beat.workflow_task_slots_info
        seen.append(
            SeenWorker(
                identity=beat.worker_identity,
                silent=max(0.0, now - beat.heartbeat_time.ToSeconds()),
                free_slots=slots.current_available_slots if slots.slot_supplier_kind else None,
                stopping=beat.status != WorkerStatus.WORKER_STATUS_RUNNING,
            )
        )
    return seen


# What the server says of a query no worker could take (matchingservice: no poller seen recently).
NO_POLLER = "no poller seen"
# The server's word for a run whose workflow task failed and is retried (every try fails alike).
TASK_FAILING = "Workflow Task in failed state"


async def _workers_and_pollers(
    client: Client, settings: Settings, queue: str
) -> tuple[list[SeenWorker], int | None]:
    """The workers of ``queue`` by their heartbeats, and how many of the server's recent
    pollers of it belong to none that stopped (a poller is listed for a minute after its
    worker shut down; a worker without heartbeats counts by its polls alone; None: the
    server cannot say)."""
    seen = await workers_on(client, settings.namespace, queue) or []
    try:
        polled = await live_pollers(client, settings, queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)
    except RPCError:
        return seen, None
    gone = {w.identity for w in seen if w.gone}
    return seen, sum(1 for p in polled if p.identity not in gone)


async def serving(client: Client, settings: Settings, queue: str) -> bool:
    """Does a worker serve ``queue``'s workflow tasks now (one that shut down a moment ago,
    which the server still lists as a poller, does not)?"""
    seen, pollers = await _workers_and_pollers(client, settings, queue)
    if pollers is None:
        return True  # the server cannot say: as if served (nothing refused on a guess)
    return pollers > 0 or any(not w.gone for w in seen)


async def unanswered(
    client: Client,
    settings: Settings,
    run_id: str,
    queue: str,
    problem: str,
    status: str = "running",
) -> XSkyError:
    """Why no worker answered a query of ``run_id`` (whose leader is on ``queue``): none
    serves the queue, one stopped answering (its heartbeats stopped: stopped, frozen, cut
    off), or they are all busy — three situations, three fixes."""
    if TASK_FAILING in problem:
        return WorkflowTaskFailingError(
            f"{run_id} is {status} but its workflow task fails on the worker at every try, so it "
            f"cannot answer or go on ({problem})",
            "the worker's log says why ($XSKY_HOME/worker.log for a worker `starter.py up` "
            "started); a worker whose code changed under it (a git pull or a checkout) must be "
            "restarted, and a bug in workflow code fixed: the run goes on from where it was. "
            "A 'Nondeterminism error' after a worker was lost while the run was queried is an "
            "SDK bug (docs/deployment.md): reset the run to the workflow task before the first "
            f"that failed (`temporal workflow reset -w {run_id} --event-id N`, or the Web UI's "
            "Reset) and it goes on",
            topic="workflow-task-failing",
            subject=run_id,
        )
    seen, polled = await _workers_and_pollers(client, settings, queue)
    pollers = polled or 0
    live = [w for w in seen if not w.gone]
    stopped = [w for w in seen if w.gone]
    # The server's own word that nobody polls the queue now: the pollers it still lists and
    # a worker whose last heartbeat is recent have stopped (one shut down a moment ago was
    # called busy).
    gone = NO_POLLER in problem
    # a worker that said it was shutting down has stopped; one silent without a word may be
    # frozen or cut off (and come back)
    silent = [w for w in stopped if not w.stopping]
    # (a frozen worker stops polling too: a moment later the server says it has seen no poller
    # — the worker is silent, not missing, and may come back; asking again is the fix)
    if (not live and not pollers and not silent) or (gone and not silent):
        left = stopped + live
        names = f" (it stopped: {', '.join(w.identity for w in left[:3])})" if left else ""
        return NoWorkerError(
            f"{run_id} is {status}"
            + (" but" if status == "running" else "; reading it needs a worker, and")
            + f" no worker serves its task queue '{queue}' at {settings.address}{names}",
            "start one with `python worker.py`",
            topic="worker",
        )
    if silent:
        names = ", ".join(f"{w.identity} (silent {w.silent:.0f}s)" for w in silent[:3])
        others = f"the {len(live)} that answer" if live else "another worker"
        return WorkerStoppedError(
            f"{run_id} did not answer: a worker that ran it stopped answering ({names}: stopped, "
            f"frozen or cut off); the server gives its work to {others} within a heartbeat timeout",
            "ask again in a moment; restart or resume that worker if it stays silent",
            topic="worker-stopped",
            subject=run_id,
        )
    full = [w for w in live if w.free_slots == 0]
    busy = f" ({len(full)} of {len(live)} with no free workflow slot)" if full else ""
    return WorkersBusyError(
        f"{run_id} did not answer within {settings.query_timeout.total_seconds():g}s: the "
        f"{len(live) or pollers} worker(s) serving '{queue}' are busy{busy} ({problem})",
        "ask again in a moment, or add workers (`python worker.py` on another machine)",
        topic="workers-busy",
        subject=run_id,
    )
