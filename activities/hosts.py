"""Where a run's workspace lives when workers share no disk: each worker's host identity
(``XSKY_HOST``) and its own task queue, ``<queue>-host-<host>``; ``claim_workspace`` answers
with the host that holds the workspace for every run that uses it (the store's claims,
activities/storage/claims.py), ``host_alive`` says whether any worker still serves a host's
queue (workflows/leader/hosts.py decides with both)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType, WorkerStatus
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.worker.v1 import WorkerInfo
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, ListWorkersRequest
from temporalio.service import RPCError

from activities.server_clock import server_time
from activities.storage import claims, open_objects
from activities.storage.snapshots import workspace_key
from xsky.artifacts import safe_component
from xsky.config import Settings
from xsky.runs import HostCheck, WorkspaceClaim, WorkspaceHost
from xsky.storage import ObjectStore

# A live poller polls again at least this often (a long poll lasts up to a minute): where the
# server keeps no worker heartbeats, a poll older than this is the only sign of a lost worker.
POLLER_SECONDS = 75.0
# Pages of the server's worker list read at most (1,000 workers each).
WORKER_PAGES = 10


def beats_key(queue: str, identity: str) -> str:
    """Where a worker of ``queue`` says, as it starts, that it sends worker heartbeats."""
    return f"_hosts/{safe_component(queue)}/beats/{safe_component(identity)}"


def announce_beats(objects: ObjectStore, queue: str, identity: str) -> None:
    """This worker (``identity``, serving the host queue ``queue``) sends worker heartbeats:
    until its first one the server does not list it, and a poll of it older than the leader's
    window is a lost worker's — not an older worker's that never beats (``_served``)."""
    objects.put(beats_key(queue, identity), json.dumps({"at": time.time()}).encode())


class HostActivities:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._objects: ObjectStore | None = None

    @property
    def objects(self) -> ObjectStore:
        if self._objects is None:
            self._objects = open_objects(self.settings)
        return self._objects

    @activity.defn(name="claim_workspace")
    async def claim_workspace(self, claim: WorkspaceClaim) -> WorkspaceHost:
        """The host that holds the run's workspace — for every run that uses it: the one that
        holds it now while it is alive (and not the one the run lost), else this worker's."""
        server_now()  # (the attempt met: its time counts from here)
        me = claims.Holder(self.settings.host, self.settings.host_queue(), -1)
        key = workspace_key(claim.run_id, claim.workspace, claim.workspace_of)
        held = await claims.settle(
            self.objects,
            key,
            me,
            claim.lost,
            lambda queue: _served(queue, claim.window, self._beats(queue)),
            claim.run_id,
        )
        if held.queue == me.queue and claim.lost:
            activity.logger.warning(
                "run %s: its workspace %s moves to %s (%s was lost)",
                claim.run_id,
                key,
                self.settings.host,
                claim.lost,
            )
        return WorkspaceHost(host=held.host, queue=held.queue)

    @activity.defn(name="host_alive")
    async def host_alive(self, check: HostCheck) -> bool:
        """Has a worker of ``check.queue`` sent its heartbeat within ``check.window`` seconds?
        (The server's list of pollers, where it cannot list workers.)"""
        return await _served(check.queue, check.window, self._beats(check.queue))

    def _beats(self, queue: str) -> Callable[[str], Awaitable[bool]]:
        """Did the worker ``identity`` of ``queue`` say it sends worker heartbeats?"""

        async def said(identity: str) -> bool:
            try:
                return await asyncio.to_thread(self.objects.exists, beats_key(queue, identity))
            except OSError:  # unreadable: judged as an older worker's (not moved sooner)
                return False

        return said


async def _served(
    queue: str, window: float, beats: Callable[[str], Awaitable[bool]] | None = None
) -> bool:
    """Does a worker still serve ``queue`` — a heartbeat or a poll within ``window`` seconds?

    Workers heartbeat to the server every few seconds (activities/telemetry.py), whether they
    poll or not (a busy worker whose slots are all taken does not poll). A worker the server
    does not list for ``queue`` has not sent its first heartbeat yet — it comes one interval
    after the worker starts — so it polled within ``window`` or it is gone: a host killed
    right after it took its first attempt was found lost only when its last poll was
    ``POLLER_SECONDS`` old, a poll lasting up to a minute. That holds for a worker that said,
    as it started, that it sends heartbeats (``beats``, announce_beats): one that did not (an
    older worker, a runtime without heartbeats) is never listed, and its idle long poll is as
    old as a minute — it was called lost after ``window`` and its workspace moved (review17,
    chaos14). Where the server keeps no heartbeats (it cannot list workers, or lists none), or
    the worker does not send them, a poll as old as that is still a live worker's. A worker that said it stopped (a graceful shutdown) serves no more, though the
    server lists its last poll for a minute."""
    client = activity.client()
    namespace = activity.info().namespace
    now = server_now()
    listed = await _listed_workers(client, namespace)
    stopped: set[str] = set()  # identities of the queue's workers that said they stopped
    last_beat: dict[str, float] = {}  # the queue's listed workers' last heartbeat times
    # Does the server keep heartbeats? It lists workers (of any queue, the caller's own first).
    beating = bool(listed)
    if listed is not None:
        for w in listed:
            beat = w.worker_heartbeat
            fresh = now - beat.heartbeat_time.ToSeconds() <= window
            running = beat.status == WorkerStatus.WORKER_STATUS_RUNNING
            if beat.task_queue != queue:
                continue
            last_beat[beat.worker_identity] = beat.heartbeat_time.ToSeconds()
            # A host shutting down gracefully still runs its agents in the workspace (for up to
            # --grace seconds) and snapshots it as each ends: it holds the workspace until it
            # says it stopped (review17: it was called lost at once, and the workspace moved to
            # another host from a stale snapshot while an agent still worked in it; 0.12.3 read
            # its last poll and waited)
            draining = beat.status == WorkerStatus.WORKER_STATUS_SHUTTING_DOWN
            if (running or draining) and fresh:
                return True
            running = running or draining
            if not running:
                stopped.add(beat.worker_identity)
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=namespace,
            task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
    )
    for p in described.pollers:
        if p.identity in stopped:
            continue
        age = now - p.last_access_time.ToSeconds()
        if age < window:
            return True
        if age < POLLER_SECONDS and not (
            beating
            and beats is not None
            and not _outlived(p.last_access_time.ToSeconds(), last_beat.get(p.identity), window)
            and await beats(p.identity)
        ):
            return True
    return False


def server_now() -> float:
    """The server's time now, as this activity knows it: the time the server gave it out
    (``started_time``) plus what the monotonic clock counted since this worker first met the
    attempt (activities/server_clock.py). Heartbeat and poll times are the server's (or the
    beating worker's), so ages taken by this worker's wall clock were off by its skew: a worker
    whose clock ran a minute ahead judged every host lost (their workspaces moved from a live
    host), one an hour behind kept a dead host for an hour (chaos15). The wall clock outside an
    activity, or without a start time."""
    now = server_time()
    return time.time() if now is None else now


def _outlived(polled: float, beat: float | None, window: float) -> bool:
    """Did a worker poll well after the last heartbeat the server lists for its identity? Then
    the poller is not the worker that beat: a beating worker's heartbeats go on while it polls,
    so its last poll is never a window newer than its last beat. A worker that said it beats
    and died leaves its identity's marker in the store; a worker that reuses the identity (PID 1
    of a restarted container) and sends no heartbeats (an older xsky, a runtime without them)
    was judged by that marker, and its idle long poll, older than the window, called it lost
    — its workspace moved from a live host (chaos15, review18)."""
    return beat is not None and polled - beat > window


async def _listed_workers(client: Any, namespace: str) -> list[WorkerInfo] | None:
    """Every worker the server lists (by its heartbeats), page by page; None when it cannot
    list them (an older server, no permission)."""
    found: list[WorkerInfo] = []
    token = b""
    for _ in range(WORKER_PAGES):
        try:
            page = await client.workflow_service.list_workers(
                ListWorkersRequest(namespace=namespace, page_size=1000, next_page_token=token)
            )
        except RPCError:
            return None if not found else found
        found.extend(page.workers_info)
        token = page.next_page_token
        if not token:
            break
    return found
