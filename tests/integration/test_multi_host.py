"""Workers on three "machines" that share no disk: each worker.py a process with its own
XSKY_HOME and workspace root and its own host identity, one S3-compatible server (moto) as the
store, one dev server (of this test: it suggests continue-as-new every 30 events).

A plan with 20 KB results passed through ``{{agent_N_result}}``, a file written by one agent and
read by a later one, an llm agent on another host than the workspace's, and a state over 1 MiB
carried across continue-as-new — every result exact. Then the same plan with the workspace's
host SIGKILLed between two workspace agents: the next one runs on the other host from the
snapshot, and no completed agent runs again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory, WorkflowQueryFailedError

from activities.artifacts import open_store
from cli.devserver import DevServer, free_port
from client import XSky
from client.connect import DATA_CONVERTER
from client.outcome import run_outcome
from client.workers import workers_on
from tests.integration.eventually import eventually
from tests.integration.histories import record, replayer
from tests.integration.test_durability import start_worker_process, stop_worker_process
from tests.integration.test_scale import CAN_EVERY_30
from tests.s3server import S3Server, s3_server
from xsky.config import load_settings
from xsky.plan import offline
from xsky.runs import AgentReport, RunOptions

pytestmark = pytest.mark.integration

LINE = "a line of twenty-eight bytes"
TEXT = "\n".join(f"{n:05d} {LINE}" for n in range(600))  # 20.4 KB, every line its own
BIG_TASK = "x" * 300_000  # four of these: a plan (and a state) over 1 MiB
LLM_TASK = "Summarize the lines"


def multi_host_plan(name: str, gate_seconds: float) -> str:
    big = "".join(
        f'<agent name="llm" id="b{i}"><task>{BIG_TASK}</task>'
        f'<config>{{"tool": "noop", "result": "big-{i}"}}</config></agent>'
        for i in range(1, 5)
    )
    return f"""<workflow name="{name}" taskId="{name}">
      <agent name="shell" id="1"><task>make 20 KB</task>
        <config>{{"tool": "shell", "command": "echo 1 >> runs.log; seq -f '%05g {LINE}' 0 599"}}</config></agent>
      <agent name="file" id="2" depends="1"><task>write it</task>
        <config>{{"tool": "file_write", "path": "notes.txt", "content": "{{{{agent_1_result}}}}"}}</config></agent>
      <agent name="llm" id="3" depends="1"><task>{LLM_TASK}</task><input>{{{{agent_1_result}}}}</input></agent>
      <agent name="llm" id="g" depends="2"><task>a pause between two workspace agents</task>
        <config>{{"tool": "noop", "seconds": {gate_seconds}, "result": "gate"}}</config></agent>
      <agent name="shell" id="4" depends="g"><task>read it back</task>
        <config>{{"tool": "shell", "command": "cat notes.txt"}}</config></agent>
      <agent name="shell" id="5" depends="4"><task>count the runs of agent 1</task>
        <config>{{"tool": "shell", "command": "cat runs.log"}}</config></agent>
      {big}
    </workflow>"""


@dataclass
class Cluster:
    server: DevServer
    s3: S3Server
    client: Client
    tmp: Path
    env: dict[str, str]  # the test process's (and every worker's) shared settings
    workers: dict[str, subprocess.Popen[bytes]]

    def start(self, host: str, *args: str) -> None:
        """A worker on its own "machine": its own home, workspaces and host identity."""
        env = {**self.env, "XSKY_HOME": str(self.tmp / host), "XSKY_HOST": host}
        self.workers[host] = start_worker_process(env, self.tmp / f"{host}.log", *args)

    async def heartbeating(self, *hosts: str) -> None:
        """Until the server lists each host's queue with a worker heartbeat (the first comes one
        interval after the worker starts): each test starts from hosts the server knows (a
        host killed before it is found lost by its last poll, after ``SILENT`` as well —
        test_host_lost_early.py)."""
        for host in hosts:
            queue = f"{self.env['XSKY_TASK_QUEUE']}-host-{host}"
            me = f"{self.workers[host].pid}@"  # the SDK's identity: pid@hostname

            async def listed(queue: str = queue, me: str = me) -> None:
                seen = await workers_on(self.client, "default", queue) or []
                assert any(w.identity.startswith(me) for w in seen), f"{queue}: no beat of {me}"

            await eventually(listed, 30)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


# h1 leads and runs llm agents; h2 and h3 run files and commands (and hold workspaces)
HOSTS = {
    "h1": ("--kinds", "llm,browser", "--no-skills"),
    "h2": ("--kinds", "file,shell", "--no-leader", "--no-skills"),
    "h3": ("--kinds", "file,shell", "--no-leader", "--no-skills"),
}


@pytest_asyncio.fixture(scope="module")
async def module_cluster(
    s3: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Cluster]:
    """One server and three hosts for the module's tests (each run its own workspace)."""
    tmp = tmp_path_factory.mktemp("multi-host")
    server = DevServer(
        db_path=tmp / "temporal.db",
        port=free_port(),
        headless=True,
        log_path=tmp / "server.log",
        extra_args=CAN_EVERY_30,
    )
    server.start(timeout=90)
    env = {
        **os.environ,
        **s3.env(s3.bucket(f"mh-{uuid.uuid4().hex[:10]}")),
        "TEMPORAL_ADDRESS": server.address,
        "XSKY_TASK_QUEUE": f"m{uuid.uuid4().hex[:6]}",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("XSKY_ARTIFACTS", None)
    env.pop("XSKY_RUNS", None)
    c = Cluster(server, s3, None, tmp, env, {})  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in env.items():
            if name.startswith(("XSKY_", "AWS_", "TEMPORAL_")):
                monkeypatch.setenv(name, value)
        monkeypatch.delenv("XSKY_ARTIFACTS", raising=False)
        monkeypatch.delenv("XSKY_RUNS", raising=False)
        monkeypatch.setenv("XSKY_HOME", str(tmp / "starter"))  # the starter's own machine
        try:
            c.client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
            yield c
        finally:
            for proc in c.workers.values():
                if proc.poll() is None:
                    stop_worker_process(proc)
            server.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


@pytest_asyncio.fixture
async def cluster(module_cluster: Cluster) -> Cluster:
    """The module's cluster with its three hosts serving: one that a test killed is started
    again (its own home, as a machine rebooted)."""
    c = module_cluster
    down = [h for h in HOSTS if h not in c.workers or c.workers[h].poll() is not None]
    for host in down:
        c.start(host, *HOSTS[host])
    await c.heartbeating(*down)
    return c


def exact(reports: list[AgentReport]) -> dict[str, str]:
    settings = load_settings()
    store = open_store(settings)
    return {
        r.id: r.result
        if r.result_ref is None or r.result is not None
        else store.read_text(r.result_ref)
        for r in reports
    }


async def run_plan(c: Cluster, name: str, gate: float) -> tuple[str, XSky]:
    x = await XSky.connect(load_settings())
    plan = multi_host_plan(name, gate)
    run = await x.run(plan, options=RunOptions(heartbeat_timeout=3.0, inline_limit=64 * 1024))
    return run.id, x


def check_results(results: dict[str, str]) -> None:
    assert results["1"] == TEXT, results["1"][:200]
    assert results["2"] == f"wrote {len(TEXT.encode()):,} bytes to notes.txt"
    assert results["3"] == offline.answer(LLM_TASK, TEXT)
    assert results["4"] == TEXT
    assert results["5"].strip() == "1"  # agent 1 ran once, wherever the workspace went
    assert [results[f"b{i}"] for i in range(1, 5)] == [f"big-{i}" for i in range(1, 5)]


@pytest.mark.timeout(240)
async def test_three_hosts_share_no_disk_and_every_result_is_exact(cluster: Cluster):
    run_id, x = await run_plan(cluster, "multihost", 0)
    run = await x.get(run_id)
    result = await asyncio.wait_for(run_outcome(run.handle), 150)
    assert result.status == "completed", result.summary
    history = [e async for e in run.handle.fetch_history_events()]
    assert history  # the last execution's
    board = {t.agent_id: t for t in (await run.board(limit=200)).tasks}
    workspace_hosts = {board[a].host for a in ("1", "2", "4", "5")}
    assert len(workspace_hosts) == 1 and workspace_hosts <= {"h2", "h3"}, workspace_hosts
    assert board["3"].host == "h1"  # the llm agent ran on another host than the workspace's
    check_results(exact(result.agents))
    # An agent's log reads whole from the bucket: its last lines travel in its kept outcome.
    kinds = [e["type"] for e in await run.transcript("T-2")]
    assert kinds[0] == "attempt" and kinds[-1] == "outcome" and "tool_call" in kinds, kinds
    desc = await run.handle.describe()
    assert desc.raw_description.workflow_execution_info.first_run_id != desc.run_id  # continued


@pytest.mark.timeout(240)
async def test_the_workspace_host_killed_between_two_agents_the_run_goes_on_from_its_snapshot(
    cluster: Cluster,
):
    run_id, x = await run_plan(cluster, "multihost-kill", 6)
    run = await x.get(run_id)

    async def written() -> str:
        try:
            tasks = (await run.board(limit=200)).tasks
        except WorkflowQueryFailedError as e:  # reading its state after continue-as-new
            raise AssertionError(str(e)) from None
        board = {t.agent_id: t for t in tasks}
        assert board["2"].status == "completed" and board["2"].host, board["2"].status
        return board["2"].host

    host = await eventually(written, 90)
    doomed = cluster.workers[host]
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait()
    result = await asyncio.wait_for(run_outcome(run.handle), 150)
    assert result.status == "completed", result.summary
    board = {t.agent_id: t for t in (await run.board(limit=200)).tasks}
    survivor = {"h2", "h3"} - {host}
    assert board["4"].host in survivor and board["5"].host in survivor
    assert all(board[a].tries == 1 for a in ("1", "2")), [board[a].tries for a in ("1", "2")]
    check_results(exact(result.agents))
    # every execution replays; the one where the host was lost is kept (test_replay_hosts.py)
    histories = await executions(cluster.client, run_id)
    lost = [h for h in histories if "host_alive" in scheduled(h)]
    assert lost, [scheduled(h) for h in histories]
    for h in histories:
        if h is lost[-1]:
            await record("workspace_hosts_lost", h)
        else:
            await replayer().replay_workflow(h)


def scheduled(history: WorkflowHistory) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def executions(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """The history of every execution of a run, first to last (continue-as-new)."""
    desc = await client.get_workflow_handle(workflow_id).describe()
    run_id: str | None = desc.raw_description.workflow_execution_info.first_run_id
    out = []
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        out.append(history)
        last = history.events[-1]
        run_id = (
            last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
            if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
            else None
        )
    return out
