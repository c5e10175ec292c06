"""Where a run's workspace lives when workers share no disk: each worker's host identity
(``XSKY_HOST``) and its own task queue, ``<queue>-host-<host>``; ``claim_workspace`` answers
with the host of the worker that takes it, ``host_alive`` says whether any worker still serves a
host's queue (workflows/leader_hosts.py decides with both)."""

from __future__ import annotations

import time

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType, WorkerStatus
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, ListWorkersRequest
from temporalio.service import RPCError

from xsky.config import Settings
from xsky.runs import HostCheck, WorkspaceClaim, WorkspaceHost

# A live poller polls again at least this often (a long poll lasts up to a minute).
POLLER_SECONDS = 75.0


class HostActivities:
    def __init__(self, settings: Settings):
        self.settings = settings

    @activity.defn(name="claim_workspace")
    async def claim_workspace(self, claim: WorkspaceClaim) -> WorkspaceHost:
        """This worker's host takes the run's workspace (its agents restore the snapshot when the
        workspace was elsewhere before)."""
        if claim.lost:
            activity.logger.warning(
                "run %s: its workspace moves to %s (%s was lost)",
                claim.run_id,
                self.settings.host,
                claim.lost,
            )
        return WorkspaceHost(host=self.settings.host, queue=self.settings.host_queue())

    @activity.defn(name="host_alive")
    async def host_alive(self, check: HostCheck) -> bool:
        """Has a worker of ``check.queue`` sent its heartbeat within ``check.window`` seconds?
        (The server's list of pollers, where it cannot list workers.)"""
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
                if w.worker_heartbeat.task_queue == check.queue
                and w.worker_heartbeat.status == WorkerStatus.WORKER_STATUS_RUNNING
            ]
            if beats:
                return any(now - b.heartbeat_time.ToSeconds() <= check.window for b in beats)
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=namespace,
                task_queue=TaskQueue(name=check.queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
            )
        )
        return any(now - p.last_access_time.ToSeconds() < POLLER_SECONDS for p in described.pollers)
