"""Crashes: a worker killed with SIGKILL mid-run, the server killed and restarted mid-run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.service import RPCError

from activities.agents.activity import AgentActivities
from activities.artifacts import ArtifactStore
from cli.devserver import DevServer, free_port
from client.outcome import run_outcome
from tests.conftest import ROOT, Env
from tests.integration.eventually import eventually
from tests.integration.helpers import query
from worker import build_workers
from workflows.leader import LeaderWorkflow
from xsky.config import Settings, load_settings
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.leader.state import PageRequest
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput

pytestmark = pytest.mark.integration

# Seconds a killed leader worker's run waits on its sticky queue before another worker takes its
# next workflow task (XSKY_STICKY_TIMEOUT, 10 s by default): what the crash tests below check
# does not depend on it, and each would sit it out once per kill.
STICKY_WAIT = "3"

# A result over the 256 bytes that travel inline only: it is stored, and handed on by reference.
LONG = "a result long enough to be stored, " * 10


def ledger_chain(n: int, sleep: float) -> str:
    """A chain of shell agents that each log 'start N' to a ledger, work, then answer N."""
    agents = []
    for i in range(1, n + 1):
        depends = f' depends="{i - 1}"' if i > 1 else ""
        agents.append(
            f'<agent name="shell" id="{i}"{depends}><task>step {i}</task><config><![CDATA[{{"tool": "shell", '
            f'"command": "echo start {i} >> ledger.txt; sleep {sleep}; echo {i}", "heartbeatTimeout": 2, '
            f'"retry": {{"maximumAttempts": 5, "initialInterval": 0.2}}}}]]></config></agent>'
        )
    return f'<workflow name="ledger" taskId="ledger">{"".join(agents)}</workflow>'


def start_worker_process(
    env: Env | dict[str, str], log: Path, *args: str, script: Path = ROOT / "worker.py"
) -> subprocess.Popen[bytes]:
    """worker.py (or a script that wraps it) in its own process (to be killed), joined to the
    test's server and queues."""
    with open(log, "ab") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(script), "--grace", "1", *args],
            env=env.environ() if isinstance(env, Env) else env,
            cwd=ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while b"serving" not in log.read_bytes():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "worker did not start"
        time.sleep(0.1)
    return proc


def stop_worker_process(proc: subprocess.Popen[bytes]) -> None:
    """A graceful stop (SIGTERM), if it is still running."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@contextlib.asynccontextmanager
async def own_server(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    extra_args: tuple[str, ...] = (),
    data_converter: DataConverter = pydantic_data_converter,
) -> AsyncIterator[tuple[DevServer, Client, Settings]]:
    """A dev server of the test's own (to kill or configure) with in-process workers on it
    (``data_converter``: theirs and the client's; xsky's own stores large payloads)."""
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "xsky"))
    monkeypatch.setenv("XSKY_TASK_QUEUE", f"{name[0]}{uuid.uuid4().hex[:6]}")
    server = DevServer(
        db_path=tmp_path / f"{name}.db",
        port=free_port(),
        headless=True,
        log_path=tmp_path / f"{name}.log",
        extra_args=extra_args,
    )
    server.start(timeout=90)
    workers = []
    try:
        client = await Client.connect(server.address, data_converter=data_converter)
        monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
        settings = load_settings()
        workers = build_workers(
            client, settings, list(TOOL_AGENT_KINDS), True, 1.0, AgentActivities(settings)
        )
        running = [
            asyncio.create_task(w.run()) for w in workers
        ]  # referenced: tasks are weakly held
        yield server, client, settings
        assert not any(t.done() for t in running), "a worker stopped during the test"
    finally:
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        server.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


async def completed_agents(handle, count: int) -> set[str]:
    """Assert that at least ``count`` agents of the run completed; return their ids."""
    board = (await query(handle, LeaderWorkflow.task_board, PageRequest(limit=2000))).tasks
    done = {t.agent_id for t in board if t.status == "completed"}
    assert len(done) >= count, f"{sorted(done)} completed, wanted {count}"
    return done


async def test_a_worker_killed_mid_run_is_replaced_and_nothing_completed_runs_twice(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XSKY_STICKY_TIMEOUT", STICKY_WAIT)  # the workers' (STICKY_WAIT)
    first = start_worker_process(env, tmp_path / "worker1.log")
    handle = await env.start(
        ledger_chain(6, 0.6), workflow_id=f"xsky-ledger-{uuid.uuid4().hex[:6]}"
    )
    try:
        completed_before = await eventually(lambda: completed_agents(handle, 2), 60)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    second = start_worker_process(env, tmp_path / "worker2.log")
    try:
        result = await asyncio.wait_for(run_outcome(handle), 90)
    finally:
        stop_worker_process(second)
    assert result.status == "completed", result.summary
    assert [a.result for a in result.agents] == [str(i) for i in range(1, 7)]

    ledger = (env.home / "runs" / handle.id / "workspace" / "ledger.txt").read_text().split("\n")
    starts = Counter(line.split()[1] for line in ledger if line.startswith("start"))
    assert completed_before, "the kill must come after some agents completed"
    for agent_id in completed_before:
        assert starts[agent_id] == 1, (
            f"agent {agent_id} completed before the kill but ran {starts[agent_id]} times"
        )
    in_flight = [a for a in starts if starts[a] > 1]
    assert len(in_flight) <= 1, (
        f"only the agent in flight at the kill may run again: {dict(starts)}"
    )
    assert all(starts[str(i)] >= 1 for i in range(1, 7))
    retried = [a for a in result.agents if a.id in in_flight]
    assert all(a.attempts == 1 for a in retried)  # one dispatch; Temporal retried the attempt


async def test_the_server_killed_and_restarted_on_its_database_finishes_the_run(
    tmp_path: Path, monkeypatch
):
    async with own_server(tmp_path, monkeypatch, "restart") as (server, client, settings):
        # Started and watched by `starter.py run --follow`, which must ride out the outage.
        plan_file = tmp_path / "ledger.xml"
        plan_file.write_text(ledger_chain(5, 0.5))
        workflow_id = f"xsky-restart-{uuid.uuid4().hex[:6]}"
        follower = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "starter.py"),
            "run",
            str(plan_file),
            "--id",
            workflow_id,
            "--follow",
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        lines: list[str] = []

        async def read() -> None:
            assert follower.stdout is not None
            async for line in follower.stdout:
                lines.append(line.decode())

        reader = asyncio.create_task(read())
        try:
            handle = client.get_workflow_handle_for(LeaderWorkflow.run, workflow_id)

            async def one_completed() -> set[str]:
                try:
                    return await completed_agents(handle, 1)
                except RPCError as e:
                    raise AssertionError(f"the CLI has not started the run: {e}") from None

            await eventually(one_completed, 60)
            server.stop(kill=True)

            def noticed() -> None:  # the follower saw the outage before the server is back
                assert "reconnecting" in "".join(lines), "".join(lines)

            await eventually(noticed, 60)
            server.start(timeout=90)
            result = await asyncio.wait_for(run_outcome(handle), 120)
            await asyncio.wait_for(follower.wait(), 60)
            await asyncio.wait_for(reader, 10)
        finally:
            if follower.returncode is None:
                follower.kill()
            reader.cancel()
        assert result.status == "completed", result.summary
        assert [a.result for a in result.agents] == ["1", "2", "3", "4", "5"]
        said = "".join(lines)
        assert follower.returncode == 0, said
        assert (
            "reconnecting" in said
            and "reconnected" in said
            and "5 of 5 agents completed" in " ".join(said.split())
        ), said
        assert "Traceback" not in said and "WARN" not in said and "temporalio_client" not in said, (
            said
        )  # no SDK retry noise


async def test_a_pending_approval_and_question_survive_a_worker_sigkill_and_a_server_restart(
    tmp_path: Path, monkeypatch
):
    from tests.integration.helpers import ask, plan, wait_requests
    from xsky.leader.state import AnswerRequest, ApproveToolRequest

    needs_approval = (
        '<agent name="explore" id="3"><task>count</task>'
        '<config>{"tool": "shell", "command": "echo approved"}</config></agent>'
    )
    queue = f"q{uuid.uuid4().hex[:6]}"
    server = DevServer(
        db_path=tmp_path / "pending.db",
        port=free_port(),
        headless=True,
        log_path=tmp_path / "server.log",
    )
    server.start(timeout=90)
    env = Env(client=None, settings=None, address=server.address, home=tmp_path / "xsky")  # type: ignore[arg-type]
    monkeypatch.setenv("XSKY_TASK_QUEUE", queue)
    monkeypatch.setenv("XSKY_HOME", str(env.home))
    monkeypatch.setenv("XSKY_STICKY_TIMEOUT", STICKY_WAIT)  # the workers' (STICKY_WAIT)
    monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
    env.settings = load_settings()
    worker = start_worker_process(env, tmp_path / "w1.log")
    try:
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(
                workflow=parse_workflow(
                    plan(ask("1", "Ship it?"), ask("2", "Which day?"), needs_approval)
                )
            ),
            id=f"xsky-pending-{uuid.uuid4().hex[:6]}",
            task_queue=queue,
        )
        before = await wait_requests(handle, 3)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        server.stop(kill=True)
        server.start(timeout=90)
        worker = start_worker_process(env, tmp_path / "w2.log")
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        handle = client.get_workflow_handle_for(LeaderWorkflow.run, handle.id)
        after = await wait_requests(handle, 3)
        assert [(r.id, r.kind, r.text) for r in after] == [(r.id, r.kind, r.text) for r in before]
        assert sorted(r.kind for r in after) == ["approval", "question", "question"]
        by_task = {r.task_id: r.id for r in after}
        await handle.execute_update(
            LeaderWorkflow.approve_tool, ApproveToolRequest(request_id=by_task["T-3"])
        )
        await handle.execute_update(
            LeaderWorkflow.answer, AnswerRequest(request_id=by_task["T-2"], text="Friday")
        )
        await handle.execute_update(
            LeaderWorkflow.answer, AnswerRequest(request_id=by_task["T-1"], text="yes")
        )
        result = await asyncio.wait_for(run_outcome(handle), 60)
        assert [a.result for a in result.agents] == ["yes", "Friday", "approved"]
    finally:
        stop_worker_process(worker)
        server.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


async def test_continue_as_new_carries_a_pending_question_which_stays_answerable(
    tmp_path: Path, monkeypatch
):
    from tests.integration.helpers import ask, board_shows, noop, plan, wait_requests
    from xsky.leader.state import AnswerRequest

    limit = ("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=30")
    async with own_server(tmp_path, monkeypatch, "can", limit) as (_, client, settings):
        # The question is asked first; the chain keeps the history growing past the limit
        # while it is pending, so the run must continue as new with it.
        # (agent 2's result is over 256 bytes: stored, it crosses continue-as-new by reference)
        chain = [
            noop(str(i), 0.1, depends=str(i - 1) if i > 2 else "", result=LONG if i == 2 else "")
            for i in range(2, 10)
        ]  # activities, not local
        wf = parse_workflow(plan(ask("1", "Publish?"), *chain))
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf),
            id=f"xsky-can-{uuid.uuid4().hex[:6]}",
            task_queue=settings.task_queue,
        )
        (req,) = await wait_requests(handle, 1, timeout=60)
        await eventually(lambda: board_shows(handle, {"9": "completed"}), timeout=60)
        runs = [e async for e in client.list_workflows(f"WorkflowId='{handle.id}'")]
        assert len(runs) >= 2, "the run should have continued as new"
        assert any(e.status.name == "CONTINUED_AS_NEW" for e in runs)
        # The newest execution, from the server itself: a listing is eventually consistent
        # and may still show an execution that continued as new as running.
        current = await client.get_workflow_handle(handle.id).describe()
        assert current.status is not None and current.status.name == "RUNNING"
        assert current.execution_time is not None
        assert current.execution_time > req.created_at, (
            "the question must have crossed a continue-as-new"
        )
        (still,) = await query(handle, LeaderWorkflow.pending_requests)
        assert still.id == req.id and still.text == "Publish?"
        await handle.execute_update(
            LeaderWorkflow.answer, AnswerRequest(request_id=req.id, text="yes, publish")
        )
        result = await asyncio.wait_for(run_outcome(handle), 60)
        assert result.status == "completed"
        # Stored results cross continue-as-new by reference: the store holds them, byte for
        # byte (small ones travel inline only).
        store = ArtifactStore(settings.artifacts)
        texts = [
            a.result if a.result is not None else store.read_text(a.result_ref)
            for a in result.agents
        ]
        assert texts == ["yes, publish", LONG] + [f"r{i}" for i in range(3, 10)]
        assert any(a.result is None and a.result_ref is not None for a in result.agents)
        assert all(a.attempts == 1 for a in result.agents[1:])  # carried across, not run again
        history = await query(handle, LeaderWorkflow.plan_history)
        assert history[0].reason == "initial plan"
