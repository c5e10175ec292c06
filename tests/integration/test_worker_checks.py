"""No worker, said within 10 s — also right after one stopped, while the server still lists
its pollers: `run`, `plan --run`, `skills scan --once` and the API."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import TaskQueueType

from client import XSky
from client._consts import UNTAKEN_SECONDS
from client.workers import missing_queues, queue_pollers
from tests.conftest import ROOT, Env
from tests.integration.helpers import noop, plan
from tests.integration.test_cli_runs import starter
from tests.integration.test_durability import start_worker_process
from xsky.errors import UnservedRunError

pytestmark = pytest.mark.integration


async def stopped_worker(env: Env, tmp_path: Path, how: signal.Signals) -> None:
    """A worker.py that polled every queue, stopped a second ago: the server still lists it."""
    proc = start_worker_process(env, tmp_path / f"worker-{how.name}.log")
    deadline = time.monotonic() + 30
    while await listed_missing(env):
        assert time.monotonic() < deadline, "the worker never polled"
        await asyncio.sleep(0.2)
    proc.send_signal(how)
    await asyncio.to_thread(proc.wait, 30)
    await asyncio.sleep(1)
    assert not await listed_missing(env), "the server no longer lists the stopped worker"


async def startup_time(env: Env) -> float:
    """What starting a command costs on this (shared, noisy) machine, measured beside the one
    under test: the bounds are on the command's waiting, not on Python's start-up."""
    began = time.monotonic()
    await starter(env, "skills", "sources")
    return time.monotonic() - began


async def listed_missing(env: Env) -> list[str]:
    """The queues the tests' plans need that the server lists no recent poller for."""
    missing = await missing_queues(env.client, env.settings, ["llm"])
    skills = await queue_pollers(
        env.client, env.settings, env.settings.skills_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
    )
    return missing + ([] if skills else [env.settings.skills_queue])


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
async def test_run_says_within_10_s_that_no_worker_polls_after_one_just_stopped(
    env: Env, tmp_path: Path, how: signal.Signals
):
    await stopped_worker(env, tmp_path, how)
    xml = tmp_path / "one.xml"
    xml.write_text(plan(noop("1"), name="unserved"))
    startup = await startup_time(env)
    began = time.monotonic()
    code, out, err = await starter(env, "run", str(xml), "--id", f"xsky-unserved-{how.name}")
    took = time.monotonic() - began
    said = " ".join((out + err).split())
    assert code == 2, said
    assert f"no worker is polling the task queue '{env.settings.task_queue}'" in said
    assert "python worker.py" in said and "begins once a worker polls" in said
    assert took < 10 + startup + 3, (took, startup)  # 10 s, and the command's own start-up
    # started, not cancelled: it runs once a worker comes
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.get(f"xsky-unserved-{how.name}")
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"


async def test_plan_run_and_the_api_say_it_too(env: Env, tmp_path: Path):
    await stopped_worker(env, tmp_path, signal.SIGKILL)
    code, out, err = await starter(env, "plan", "1. say hello", "--run")
    assert code == 2 and "no worker is polling the task queue" in " ".join((out + err).split())
    async with XSky.connect() as x:
        began = time.monotonic()
        with pytest.raises(UnservedRunError) as e:
            await x.run(plan(noop("1"), name="api-unserved"), id="xsky-api-unserved")
        assert time.monotonic() - began < 10
        assert e.value.subject == "xsky-api-unserved"
        assert "begins once a worker polls" in str(e.value)


async def test_skills_scan_once_says_no_worker_polls_and_never_outwaits_its_timeout(
    env: Env, tmp_path: Path
):
    await stopped_worker(env, tmp_path, signal.SIGTERM)
    startup = await startup_time(env)
    began = time.monotonic()
    code, out, err = await starter(env, "skills", "scan", "--once", "--timeout", "30")
    took = time.monotonic() - began
    said = " ".join((out + err).split())
    assert code == 2, said
    assert f"no worker is polling the task queue '{env.settings.skills_queue}'" in said
    assert took < 10 + startup + 3, (took, startup)
    # a --timeout shorter than the check (PICKUP_WAIT, 5 s): the command still ends within it.
    # A busy machine makes a process's start-up vary by seconds from one to the next: the bound
    # takes the longer of two start-ups measured around it, or the run just before (the 5 s
    # check) less most of the 3 s the shorter timeout saves.
    checked = took
    began = time.monotonic()
    code, out, err = await starter(env, "skills", "scan", "--once", "--timeout", "2")
    took = time.monotonic() - began
    assert code == 2, " ".join((out + err).split())
    startup = max(startup, await startup_time(env))
    assert took < 2 + startup + 3 or took < checked - 1.5, (took, checked, startup)


async def test_following_says_when_no_worker_of_a_kind_takes_an_agent(env: Env, tmp_path: Path):
    await env.start_worker(kinds=["shell"])  # leads runs; llm agents go to the llm queue
    proc = start_worker_process(
        env, tmp_path / "llm-worker.log", "--kinds", "llm", "--no-leader", "--no-skills"
    )
    deadline = time.monotonic() + 30
    while await missing_queues(env.client, env.settings, ["llm"]):
        assert time.monotonic() < deadline, "the llm worker never polled"
        await asyncio.sleep(0.2)
    proc.kill()
    await asyncio.to_thread(proc.wait, 30)
    xml = tmp_path / "llm.xml"
    xml.write_text(plan(noop("1"), name="kindless"))
    follower = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "starter.py"),
        "run",
        str(xml),
        "--follow",
        env=env.environ(),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert follower.stdout is not None
    began, seen = time.monotonic(), b""
    try:
        while b"no worker has taken T-1" not in seen:
            seen += await asyncio.wait_for(follower.stdout.readline(), 30)
        assert time.monotonic() - began < UNTAKEN_SECONDS + 10
        await env.start_worker(kinds=["llm"], leader=False)  # one comes: the run goes on
        out, _ = await asyncio.wait_for(follower.communicate(), 60)
        assert follower.returncode == 0, (seen + out).decode()
    finally:
        if follower.returncode is None:
            follower.kill()


async def test_a_leader_worker_of_some_kinds_says_it_cannot_run_the_agents_a_full_one_hands_it(
    env: Env, tmp_path: Path
):
    """Beside a full worker on one queue, a leader worker started with --kinds shell took the
    agents the full one's runs put on the leader's queue once that one died, and they failed
    "not registered" (a chaos run). It says so as it starts."""
    from tests.integration.test_durability import stop_worker_process

    log = tmp_path / "partial.log"
    proc = start_worker_process(env, log, "--kinds", "shell", "--no-skills")
    try:
        deadline = time.monotonic() + 10  # (said just after "serving")
        while "--no-leader" not in log.read_text() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        said = " ".join(log.read_text().split())
        assert "this leader worker runs only shell agents" in said, said
        assert "--no-leader" in said
    finally:
        stop_worker_process(proc)
    quiet = tmp_path / "agents-only.log"
    proc = start_worker_process(env, quiet, "--kinds", "shell", "--no-leader", "--no-skills")
    try:
        assert "this leader worker runs only" not in quiet.read_text()
    finally:
        stop_worker_process(proc)
