"""A named workspace shared by runs, on workers that share no disk: one host holds it for every
run, and an agent's link left on a host never redirects a later restore there.

Two worker.py processes with their own homes and hosts — h-a runs shell agents, h-b file agents
(so that a claim made on each kind's queue is taken by a known worker) — a leader of their own,
one S3-compatible server (moto), one dev server (test_multi_host.py's Cluster).

1. Two runs naming one workspace: the first claims it on the shell queue (h-a); the second's
   claim is taken by h-b (the file queue) and answered with h-a, which holds it and is alive —
   the second run's agent runs on h-a. (Claimed per run, it ran on h-b.)
2. Finding 1 across hosts: a run's agent on h-a links ``d`` to a canary folder outside; h-a is
   killed, the next run's agent on h-b makes ``d/authorized_keys``; h-a comes back (its stale
   link still there), h-b is killed, and a third run's agent on h-a restores the workspace. The
   canary is never written; ``d`` is a folder holding the file.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
import pytest_asyncio

from cli.devserver import DevServer, free_port
from client import XSky
from client.connect import DATA_CONVERTER
from client.outcome import run_outcome
from tests.integration.test_durability import stop_worker_process
from tests.integration.test_multi_host import Cluster
from tests.s3server import S3Server, s3_server
from xsky.config import load_settings
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

KINDS = {"h-a": "shell", "h-b": "file"}
CANARY = b"ssh-ed25519 AAAA the-canary-key"


@pytest_asyncio.fixture(scope="module")
async def cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    from temporalio.client import Client

    tmp = tmp_path_factory.mktemp("shared-workspace")
    with s3_server() as s3, pytest.MonkeyPatch.context() as mp:
        server = DevServer(
            db_path=tmp / "temporal.db",
            port=free_port(),
            headless=True,
            log_path=tmp / "server.log",
        )
        server.start(timeout=90)
        c = Cluster(server, s3, None, tmp, _env(s3, server), {})  # type: ignore[arg-type]
        for name, value in c.env.items():
            if name.startswith(("XSKY_", "AWS_", "TEMPORAL_")):
                mp.setenv(name, value)
        mp.delenv("XSKY_ARTIFACTS", raising=False)
        mp.delenv("XSKY_RUNS", raising=False)
        mp.setenv("XSKY_HOME", str(tmp / "starter"))
        try:
            c.client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
            c.start("lead", "--kinds", "llm,browser", "--no-skills")
            for host in KINDS:
                up(c, host)
            await c.heartbeating("lead", *KINDS)  # a host killed before it is lost late
            yield c
        finally:
            for proc in c.workers.values():
                if proc.poll() is None:
                    stop_worker_process(proc)
            server.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


def _env(s3: S3Server, server: DevServer) -> dict[str, str]:
    env = {
        **os.environ,
        **s3.env(s3.bucket(f"ws-{uuid.uuid4().hex[:10]}")),
        "TEMPORAL_ADDRESS": server.address,
        "XSKY_TASK_QUEUE": f"w{uuid.uuid4().hex[:6]}",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("XSKY_ARTIFACTS", None)
    env.pop("XSKY_RUNS", None)
    return env


def up(c: Cluster, host: str) -> None:
    """``host``'s worker running (started again with the same home when it was killed)."""
    proc = c.workers.get(host)
    if proc is None or proc.poll() is not None:
        c.start(host, "--kinds", KINDS[host], "--no-leader", "--no-skills")


def kill(c: Cluster, host: str) -> None:
    proc = c.workers[host]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def plan(name: str, kind: str, config: str) -> str:
    return f"""<workflow name="{name}" taskId="{name}">
      <agent name="{kind}" id="1"><task>{name}</task><config>{escape(config)}</config></agent>
    </workflow>"""


async def ran(
    name: str, workspace: str, kind: str, config: str, completed: bool = True
) -> tuple[str, str]:
    """Run a one-agent plan in ``workspace``; (the host its agent ran on, its result — or the
    run's summary when it did not complete and ``completed`` is not required)."""
    x = await XSky.connect(load_settings())
    options = RunOptions(workspace=workspace, heartbeat_timeout=2.0)
    run = await x.run(plan(f"{name}-{uuid.uuid4().hex[:6]}", kind, config), options=options)
    result = await asyncio.wait_for(run_outcome(run.handle), 90)
    assert result.status == "completed" or not completed, result.summary
    (task,) = (await run.board(limit=10)).tasks
    done = result.status == "completed"
    return task.host or "", (result.agents[0].result or "") if done else result.summary


def shell(command: str) -> str:
    return json.dumps({"tool": "shell", "command": command})


@pytest.mark.timeout(120)
async def test_two_runs_naming_one_workspace_run_on_the_host_that_holds_it(cluster: Cluster):
    for host in KINDS:
        up(cluster, host)
    first, _ = await ran("first", "shared", "shell", shell("echo one > one.txt"))
    assert first == "h-a"  # the only worker of the shell queue took the claim
    # claimed on the file queue — h-b's worker takes the claim, and answers with h-a
    second, result = await ran(
        "second", "shared", "file", '{"tool": "file_read", "path": "one.txt"}'
    )
    assert second == "h-a", f"the second run of workspace 'shared' ran on {second}"
    assert result.strip() == "one"


@pytest.mark.timeout(180)
async def test_a_link_an_agent_left_on_a_host_never_redirects_a_later_restore_there(
    cluster: Cluster, tmp_path: Path
):
    outside = tmp_path / "outside"  # stands in for /root/.ssh
    outside.mkdir()
    (outside / "authorized_keys").write_bytes(CANARY)
    for host in KINDS:
        up(cluster, host)
    host, _ = await ran("plant", "site", "shell", shell(f"ln -s {outside} d && echo planted"))
    assert host == "h-a"
    planted = cluster.tmp / "h-a" / "workspaces" / "site" / "d"
    assert planted.is_symlink()
    kill(cluster, "h-a")
    # the workspace moves to h-b (h-a lost), whose agent makes d/ a folder with the file
    host, _ = await ran(
        "fill",
        "site",
        "file",
        '{"tool": "file_write", "path": "d/authorized_keys", "content": "ssh-ed25519 AAAA attacker"}',
    )
    assert host == "h-b"
    up(cluster, "h-a")  # back, with its stale copy: d is still the link
    assert planted.is_symlink()
    kill(cluster, "h-b")
    host, listed = await ran(
        "pull", "site", "shell", shell("cat d/authorized_keys"), completed=False
    )
    assert (outside / "authorized_keys").read_bytes() == CANARY, "written through the link"
    assert sorted(p.name for p in outside.iterdir()) == ["authorized_keys"]
    assert host == "h-a"
    assert not planted.is_symlink() and planted.is_dir()
    assert (planted / "authorized_keys").read_text() == "ssh-ed25519 AAAA attacker"
    assert listed.strip() == "ssh-ed25519 AAAA attacker"
