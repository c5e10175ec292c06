"""Where a run's workspace lives when workers share no disk: each worker's host identity
(``XSKY_HOST``) and its own task queue, ``<queue>-host-<host>``; ``claim_workspace`` answers
with the host that holds the workspace for every run that uses it (the store's claims,
activities/storage/claims.py), ``host_alive`` says whether any worker still serves a host's
queue (workflows/leader/hosts.py decides with both)."""

from __future__ import annotations

import time

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType, WorkerStatus
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, ListWorkersRequest
from temporalio.service import RPCError

from activities.storage import claims, open_objects
from activities.storage.snapshots import workspace_key
from xsky.config import Settings
from xsky.runs import HostCheck, WorkspaceClaim, WorkspaceHost
from xsky.storage import ObjectStore

# A live poller polls again at least this often (a long poll lasts up to a minute).
POLLER_SECONDS = 75.0


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
        me = claims.Holder(self.settings.host, self.settings.host_queue(), -1)
        key = workspace_key(claim.run_id, claim.workspace, claim.workspace_of)
        held = await claims.settle(
            self.objects,
            key,
            me,
            claim.lost,
            lambda queue: _served(queue, claim.window),
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
        return await _served(check.queue, check.window)


async def _served(queue: str, window: float) -> bool:
    """Does a worker still serve ``queue`` (a heartbeat within ``window`` seconds)?"""
    client = activity.client()
    namespace = activity.info().namespace
    now = time.time()
    try:
        listed = await client.workflow_service.list_workers(
            ListWorkersRequest(namespace=namespace, page_size=1000)
        )
    except RPCError:
        listed = None
    if listed is not None:
        beats = [
            w.worker_heartbeat
            for w in listed.workers_info
            if w.worker_heartbeat.task_queue == queue
            and w.worker_heartbeat.status == WorkerStatus.WORKER_STATUS_RUNNING
        ]
        if beats:
            return any(now - b.heartbeat_time.ToSeconds() <= window for b in beats)
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=namespace,
            task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
    )
    return any(now - p.last_access_time.ToSeconds() < POLLER_SECONDS for p in described.pollers)
