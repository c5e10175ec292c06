"""activities/hosts.py ``_served``: is a host's queue served — told from the server's worker
list (heartbeats) and its pollers, with a fake server."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import TypeVar
from unittest import mock

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.enums.v1 import WorkerStatus
from temporalio.api.taskqueue.v1 import PollerInfo
from temporalio.api.worker.v1 import WorkerHeartbeat, WorkerInfo
from temporalio.api.workflowservice.v1 import DescribeTaskQueueResponse, ListWorkersResponse
from temporalio.service import RPCError, RPCStatusCode

from activities import hosts

Q = "q-host-h2"
RUNNING = WorkerStatus.WORKER_STATUS_RUNNING
SHUTDOWN = WorkerStatus.WORKER_STATUS_SHUTDOWN
SHUTTING_DOWN = WorkerStatus.WORKER_STATUS_SHUTTING_DOWN
T = TypeVar("T")


def ago(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(int((time.time() - seconds) * 1e9))
    return ts


# The cases are built when their test runs, not when pytest collects them: a timestamp made at
# collection is minutes old by the time a busy run gets to the test (a poll 3 s old became 2 min).
Made = Callable[[], T]


def worker(identity: str, queue: str, silent: float, status: int = RUNNING) -> Made[WorkerInfo]:
    return lambda: WorkerInfo(
        worker_heartbeat=WorkerHeartbeat(
            worker_identity=identity,
            task_queue=queue,
            status=status,  # type: ignore[arg-type]
            heartbeat_time=ago(silent),
        )
    )


def poller(identity: str, age: float) -> Made[PollerInfo]:
    return lambda: PollerInfo(identity=identity, last_access_time=ago(age))


async def served(
    workers: list[Made[WorkerInfo]] | None,
    pollers: list[Made[PollerInfo]],
    said: frozenset[str] | None = None,
) -> bool:
    """``said``: the identities that told the store they send heartbeats (None: every one)."""

    async def beats(identity: str) -> bool:
        return said is None or identity in said

    async def list_workers(req):
        if workers is None:
            raise RPCError("unimplemented", RPCStatusCode.UNIMPLEMENTED, b"")
        return ListWorkersResponse(workers_info=[w() for w in workers])

    async def describe_task_queue(req):
        return DescribeTaskQueueResponse(pollers=[p() for p in pollers])

    service = SimpleNamespace(list_workers=list_workers, describe_task_queue=describe_task_queue)
    client = SimpleNamespace(workflow_service=service)
    with (
        mock.patch.object(hosts.activity, "client", return_value=client),
        mock.patch.object(hosts.activity, "info", return_value=SimpleNamespace(namespace="ns")),
    ):
        return await hosts._served(Q, 10.0, beats)


ME = worker("1@leader", "q", 1.0)  # the asking worker: the server keeps heartbeats


@pytest.mark.parametrize(
    ("workers", "pollers", "expected"),
    [
        # a host killed right after its first poll, before its first heartbeat: lost once its
        # last poll is older than the window (it was alive for 75 s)
        ([ME], [poller("2@h2", 20.0)], False),
        ([ME], [poller("2@h2", 3.0)], True),  # just started, not listed yet: alive
        # a busy host (every slot taken: it does not poll) that heartbeats: alive
        ([ME, worker("2@h2", Q, 2.0)], [poller("2@h2", 300.0)], True),
        ([ME, worker("2@h2", Q, 2.0)], [], True),
        # a listed host silent past the window: lost — unless a new worker polls the queue
        ([ME, worker("2@h2", Q, 30.0)], [poller("2@h2", 30.0)], False),
        ([ME, worker("2@h2", Q, 30.0)], [poller("2@h2", 30.0), poller("3@h2", 1.0)], True),
        # a host that shut down a moment ago (the server lists its last poll for a minute)
        ([ME, worker("2@h2", Q, 1.0, SHUTDOWN)], [poller("2@h2", 2.0)], False),
        # a host shutting down gracefully, its agents still running in the workspace (they
        # snapshot it as they end): it holds the workspace until it stops (review17)
        ([ME, worker("2@h2", Q, 1.0, SHUTTING_DOWN)], [poller("2@h2", 20.0)], True),
        ([ME, worker("2@h2", Q, 1.0, SHUTTING_DOWN)], [], True),
        ([ME, worker("2@h2", Q, 30.0, SHUTTING_DOWN)], [poller("2@h2", 30.0)], False),
        # a server that keeps no heartbeats: only a poll older than a long poll is a lost one
        (None, [poller("2@h2", 50.0)], True),
        ([], [poller("2@h2", 50.0)], True),
        (None, [poller("2@h2", 80.0)], False),
        (None, [], False),
    ],
)
async def test_served(workers, pollers, expected):
    assert await served(workers, pollers) is expected


@pytest.mark.parametrize(
    ("pollers", "expected"),
    [
        # an idle worker that sends no heartbeats (an older one): its long poll is up to a
        # minute old, and it is alive (review17, chaos14: its workspace moved after 10 s)
        ([poller("2@h2", 20.0)], True),
        ([poller("2@h2", 70.0)], True),
        ([poller("2@h2", 80.0)], False),
        # one that said it beats, not listed yet: killed before its first heartbeat
        ([poller("2@h2", 80.0), poller("3@h2", 20.0)], False),
    ],
)
async def test_a_worker_that_sends_no_heartbeats_is_judged_by_its_long_poll(pollers, expected):
    assert await served([ME], pollers, said=frozenset({"3@h2"})) is expected


async def test_unknown_whether_a_worker_beats_it_is_judged_by_its_long_poll():
    async def list_workers(req):
        return ListWorkersResponse(workers_info=[ME()])

    async def describe_task_queue(req):
        return DescribeTaskQueueResponse(pollers=[poller("2@h2", 20.0)()])

    service = SimpleNamespace(list_workers=list_workers, describe_task_queue=describe_task_queue)
    with (
        mock.patch.object(
            hosts.activity, "client", return_value=SimpleNamespace(workflow_service=service)
        ),
        mock.patch.object(hosts.activity, "info", return_value=SimpleNamespace(namespace="ns")),
    ):
        assert await hosts._served(Q, 10.0) is True


@pytest.mark.parametrize(
    ("skew", "silent", "expected"),
    [
        (60.0, 1.0, True),  # this worker's clock a minute ahead: a host that beat 1 s ago lives
        (-3600.0, 120.0, False),  # an hour behind: a host silent 120 s is lost, not alive
    ],
)
async def test_ages_are_taken_on_the_servers_clock_not_this_workers(skew, silent, expected):
    """chaos15: _served aged the server's heartbeat and poll times by this worker's wall clock."""
    made = worker("2@h2", Q, silent)(), poller("2@h2", silent)()
    started = datetime.fromtimestamp(time.time(), UTC)  # the server gave the attempt out now

    async def list_workers(req):
        return ListWorkersResponse(workers_info=[ME(), made[0]])

    async def describe_task_queue(req):
        return DescribeTaskQueueResponse(pollers=[made[1]])

    service = SimpleNamespace(list_workers=list_workers, describe_task_queue=describe_task_queue)
    info = SimpleNamespace(
        namespace="ns", started_time=started, workflow_id="w", activity_id=str(skew), attempt=1
    )
    real = time.time
    with (
        mock.patch.object(
            hosts.activity, "client", return_value=SimpleNamespace(workflow_service=service)
        ),
        mock.patch.object(hosts.activity, "info", return_value=info),
        mock.patch.object(hosts.time, "time", lambda: real() + skew),
    ):

        async def said(identity: str) -> bool:  # it told the store it beats
            return True

        assert await hosts._served(Q, 10.0, said) is expected


async def test_a_worker_reusing_a_dead_beating_workers_identity_is_judged_by_its_polls():
    """chaos15/review18: "1@h2" said it beats and died (listed, silent 400 s, its marker kept);
    a worker without heartbeats reuses the identity and long-polls (30 s ago): it serves."""
    assert await served(
        [ME, worker("1@h2", Q, 400.0)], [poller("1@h2", 30.0)], said=frozenset({"1@h2"})
    )
    # the beating worker itself, dead (its last poll as old as its last beat): lost
    assert not await served(
        [ME, worker("1@h2", Q, 30.0)], [poller("1@h2", 32.0)], said=frozenset({"1@h2"})
    )
