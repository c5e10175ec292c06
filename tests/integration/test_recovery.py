"""Recovery from a lost worker: nothing a command started outlives its worker (killed, or
stopped), the lost attempt is retried at once (not after the error backoff), and an attempt
after an error still waits its backoff."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.test_durability import start_worker_process, stop_worker_process
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

CANARY_SLEEP = 3  # seconds the escaped children wait before their side effect

# On its first attempt the command leaves children behind every way a shell can — a
# double fork into a new session, nohup + disown, a plain background job — that each do a
# side effect after CANARY_SLEEP, then works on; a retry answers at once.
ESCAPES = (
    "if test -e started; then echo retried; exit 0; fi; touch started; "
    f"(setsid sh -c 'sleep {CANARY_SLEEP}; touch canary-setsid' &); "
    f"nohup sh -c 'sleep {CANARY_SLEEP}; touch canary-nohup' >/dev/null 2>&1 & disown; "
    f"(sh -c 'sleep {CANARY_SLEEP}; touch canary-fork' &) & "
    "sleep 60; echo first"
)


def shell_plan(command: str, config: dict[str, object]) -> str:
    cfg = json.dumps({"tool": "shell", "command": command, **config})
    return (
        '<workflow name="recovery" taskId="recovery"><agent name="shell" id="1"><task>work</task>'
        f"<config><![CDATA[{cfg}]]></config></agent></workflow>"
    )


def shell_worker(env: Env, log: Path) -> subprocess.Popen[bytes]:
    return start_worker_process(env, log, "--kinds", "shell", "--no-leader", "--no-skills")


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc; a zombie that a stopped worker cannot
    reap yet is dead)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                state, parent = (
                    Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:2]
                )
            except OSError:
                continue
            if state != "Z":
                parents.setdefault(int(parent), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def command_processes(worker: subprocess.Popen[bytes]) -> list[bytes]:
    """The command lines of the worker's live processes that belong to a command (the worker
    keeps a permission checker of its own beside them)."""
    found = []
    for pid in descendants(worker.pid):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"sleep" in line or b"bwrap" in line or b"canary" in line:
            found.append(line[:200])
    return found


def canaries(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.glob("canary-*"))


async def test_a_killed_workers_escaped_children_never_do_their_side_effect_and_a_new_worker_finishes(
    env: Env, tmp_path: Path
):
    await env.start_worker(kinds=["llm"])  # the leader; the shell agent runs only in processes
    # An error backoff of 30 s: the lost attempt must not wait it.
    config = {"heartbeatTimeout": 4, "retry": {"initialInterval": 30, "maximumInterval": 60}}
    handle = await env.start(shell_plan(ESCAPES, config), options=RunOptions(max_auto_replans=0))
    workspace = env.home / "runs" / handle.id / "workspace"
    first = shell_worker(env, tmp_path / "first.log")
    try:

        def children_started() -> None:
            assert (workspace / "started").exists(), "the first attempt has not started"
            names = {
                Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ")
                for p in descendants(first.pid)
                if Path(f"/proc/{p}").exists()
            }
            assert sum(b"sleep 3" in n for n in names) >= 3, names

        await eventually(children_started, 60, interval=0.05)
        os.kill(first.pid, signal.SIGKILL)
        killed = time.monotonic()
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    second = shell_worker(env, tmp_path / "second.log")
    try:
        result = await asyncio.wait_for(run_outcome(handle), 60)
        recovered = time.monotonic() - killed
    finally:
        stop_worker_process(second)
    assert result.status == "completed" and result.agents[0].result == "retried", result.summary
    # Heartbeat timeout (4 s) + the flat retry (1 s) + a worker's start, not the 30 s backoff.
    assert recovered < 20, f"the lost attempt was retried {recovered:.1f}s after the kill"
    # The side effects were due CANARY_SLEEP after the first attempt started: long past.
    await asyncio.sleep(max(0.0, CANARY_SLEEP + 2 - (time.monotonic() - killed)))
    assert canaries(workspace) == [], "a child of the killed worker did its side effect"


async def test_a_stopped_workers_command_is_killed_and_never_does_its_side_effect(
    env: Env, tmp_path: Path
):
    await env.start_worker(kinds=["llm"])
    command = (
        "if test -e started; then echo retried; exit 0; fi; touch started; "
        f"(setsid sh -c 'sleep {CANARY_SLEEP + 3}; touch canary-setsid' &); "
        f"sleep {CANARY_SLEEP + 3}; touch canary-command; echo first"
    )
    handle = await env.start(shell_plan(command, {}), options=RunOptions(max_auto_replans=0))
    workspace = env.home / "runs" / handle.id / "workspace"
    workers = [shell_worker(env, tmp_path / f"w{i}.log") for i in range(2)]
    stopped: subprocess.Popen[bytes] | None = None
    try:

        def running_one() -> subprocess.Popen[bytes]:
            assert (workspace / "started").exists(), "the first attempt has not started"
            busy = [w for w in workers if command_processes(w)]
            assert len(busy) == 1, "no worker runs the command yet"
            return busy[0]

        stopped = await eventually(running_one, 60, interval=0.05)
        stopped.send_signal(signal.SIGSTOP)
        paused = time.monotonic()
        worker = stopped

        def command_killed() -> None:  # by its watchdog, while the worker is stopped
            assert command_processes(worker) == [], "the stopped worker's command still runs"

        await eventually(command_killed, 20, interval=0.1)
        # The command and its setsid child were due CANARY_SLEEP + 3 s in: long past.
        await asyncio.sleep(max(0.0, CANARY_SLEEP + 5 - (time.monotonic() - paused)))
        assert canaries(workspace) == []
        stopped.send_signal(signal.SIGCONT)
        # Resumed, the stale attempt's heartbeat or completion is refused; the run completes
        # with the retry's answer and the first attempt's side effect never happens.
        result = await asyncio.wait_for(run_outcome(handle), 90)
        assert result.status == "completed", result.summary
        assert result.agents[0].result == "retried", result.agents[0].result
        assert canaries(workspace) == []
        assert stopped.poll() is None, "the resumed worker serves on"
    finally:
        if stopped is not None and stopped.poll() is None:
            stopped.send_signal(signal.SIGCONT)
        for w in workers:
            stop_worker_process(w)
