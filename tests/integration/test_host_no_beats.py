"""A workspace host that sends no worker heartbeats (an older worker, or an SDK or server that
does not send or list them), idle among hosts that do, still holds its workspace.

The server lists the other workers by their heartbeats, so ``_served`` (activities/hosts.py)
judged a host it does not list by its last poll against the leader's 10 s window — right for a
host killed before its first heartbeat (test_host_lost_early.py), wrong for one that never
beats: an idle worker long-polls, its last poll up to a minute old. The next run naming the
workspace took it for lost and moved the workspace to another host from its snapshot (review17),
while the first host, alive, still held it for the runs that had it. The claim now says whether
its holder sends heartbeats; one that does not is judged by the 75 s rule.

h-a (no heartbeats) runs shell agents, h-b (heartbeats) file agents: the first run claims the
workspace on the shell queue (h-a); the second's claim, made on the file queue, is taken by h-b
once h-a's last poll is older than the window — and answered with h-a.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from cli.devserver import DevServer, free_port
from client.connect import DATA_CONVERTER
from tests.conftest import ROOT
from tests.integration.eventually import eventually
from tests.integration.test_durability import start_worker_process, stop_worker_process
from tests.integration.test_multi_host import Cluster
from tests.integration.test_multi_host_workspace import _env, ran, shell
from tests.s3server import s3_server
from xsky.config import load_settings

pytestmark = pytest.mark.integration

WINDOW = 10.0  # workflows/leader/hosts.py SILENT


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    from temporalio.client import Client

    with s3_server() as s3, pytest.MonkeyPatch.context() as mp:
        server = DevServer(
            db_path=tmp_path / "temporal.db",
            port=free_port(),
            headless=True,
            log_path=tmp_path / "server.log",
        )
        server.start(timeout=90)
        c = Cluster(server, s3, None, tmp_path, _env(s3, server), {})  # type: ignore[arg-type]
        for name, value in c.env.items():
            if name.startswith(("XSKY_", "AWS_", "TEMPORAL_")):
                mp.setenv(name, value)
        mp.delenv("XSKY_ARTIFACTS", raising=False)
        mp.delenv("XSKY_RUNS", raising=False)
        mp.setenv("XSKY_HOME", str(tmp_path / "starter"))
        try:
            c.client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
            c.start("lead", "--kinds", "llm,browser", "--no-skills")
            env = {
                **c.env,
                "XSKY_HOME": str(tmp_path / "h-a"),
                "XSKY_HOST": "h-a",
                "XSKY_TEST_OLDER": "1",  # an older worker: no heartbeats, and says none
            }
            c.workers["h-a"] = start_worker_process(
                env,
                tmp_path / "h-a.log",
                "--kinds",
                "shell",
                "--no-leader",
                "--no-skills",
                script=ROOT / "tests" / "integration" / "no_beat_worker.py",
            )
            c.start("h-b", "--kinds", "file", "--no-leader", "--no-skills")
            await c.heartbeating("lead", "h-b")
            yield c
        finally:
            for proc in c.workers.values():
                if proc.poll() is None:
                    stop_worker_process(proc)
            server.stop(kill=True)


async def last_poll_age(c: Cluster, queue: str) -> float:
    described = await c.client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace="default",
            task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
    )
    return min(
        (time.time() - p.last_access_time.ToSeconds() for p in described.pollers),
        default=float("inf"),
    )


@pytest.mark.timeout(150)
async def test_an_idle_host_without_worker_heartbeats_keeps_its_workspace(cluster: Cluster):
    first, _ = await ran("first", "kept", "shell", shell("echo one > one.txt"))
    assert first == "h-a"
    queue = f"{load_settings().task_queue}-host-h-a"

    async def idle_past_the_window() -> None:
        assert await last_poll_age(cluster, queue) > WINDOW + 2

    # an idle worker's long poll: its last poll grows old though the worker is alive
    await eventually(idle_past_the_window, 75, interval=0.5)
    assert cluster.workers["h-a"].poll() is None
    second, result = await ran("second", "kept", "file", '{"tool": "file_read", "path": "one.txt"}')
    assert (second, result.strip()) == ("h-a", "one"), (second, result)
    assert "moves to" not in (cluster.tmp / "h-b.log").read_text()
