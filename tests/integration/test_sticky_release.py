"""A leader's worker SIGKILLed between two agents: the run's next workflow task goes to the other
leader worker at once (client/sticky_release.py), not after the 30 s sticky wait it took before
(a chain's next agent started 30.6 s after its predecessor ended)."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import pytest

from client.outcome import run_outcome
from client.sticky_release import last_taken_by
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.test_durability import start_worker_process, stop_worker_process

pytestmark = pytest.mark.integration

STEP = 1.5  # seconds each agent sleeps: the kill falls inside one


def chain(n: int) -> str:
    command = json.dumps({"tool": "shell", "command": f"date +%s.%N >> stamps; sleep {STEP}"})
    agents = "".join(
        f'<agent name="shell" id="{i}"{f" depends={chr(34)}{i - 1}{chr(34)}" if i else ""}>'
        f"<task>step {i}</task><config><![CDATA[{command}]]></config></agent>"
        for i in range(n)
    )
    return f'<workflow name="chain" taskId="chain">{agents}</workflow>'


def releasers(queue: str) -> list[int]:
    """Live hand-back processes watching a worker of this test's queue."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"client.sticky_release" in line and f"--queue={queue}=".encode() in line:
            found.append(int(proc.name))
    return found


async def test_a_killed_leader_workers_run_goes_on_at_once_on_another_leader_worker(
    env: Env, tmp_path: Path
) -> None:
    queue = env.settings.task_queue
    await env.start_worker(kinds=["shell"], leader=False)  # the agents: never killed
    first = start_worker_process(
        env, tmp_path / "first.log", "--kinds", "llm", "--no-skills", "--log-format", "json"
    )
    try:
        handle = await env.start(chain(6))
        stamps = env.home / "runs" / handle.id / "workspace" / "stamps"

        def started(count: int) -> None:
            assert stamps.exists() and len(stamps.read_text().split()) >= count

        await eventually(lambda: started(1), 60)  # the first worker holds the run now
        await env.start_worker(kinds=["llm"], leader=True)  # the leader worker that stays
        # other runs, each held by whichever leader worker took it: only the first's go back
        others = [await env.start(chain(3)) for _ in range(3)]
        await eventually(lambda: started(2), 60)
        await asyncio.sleep(0.3)  # inside agent 1's sleep: no workflow task is queued
        holders = {
            h.id: await last_taken_by(env.client, "default", h.id, (await h.describe()).run_id)
            for h in [handle, *others]
        }
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed = time.time()
        result = await asyncio.wait_for(run_outcome(handle), 120)
        for other in others:
            assert (await asyncio.wait_for(run_outcome(other), 120)).status == "completed"
    finally:
        if first.poll() is None:
            first.kill()
    assert result.status == "completed", result.summary
    times = [float(t) for t in stamps.read_text().split()]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(times) == 6
    # the step after the kill started when its predecessor ended, not 30 s later
    after = next(t for t in times if t > killed)
    assert after - killed < STEP + 5, (after - killed, gaps)
    assert max(gaps) < STEP + 5, gaps
    said = (tmp_path / "first.log").read_text()
    held = sorted(run for run, who in holders.items() if who.startswith(f"{first.pid}@"))
    assert handle.id in held, holders
    # in the worker's log, in its format (JSON lines here)
    (line,) = [json.loads(x) for x in said.splitlines() if '"logger": "xsky.sticky_release"' in x]
    assert line["message"] == (
        f"worker {first.pid}@{holders[handle.id].split('@', 1)[1]} died; {len(held)} run(s) it "
        f"held handed back to the other workers: {', '.join(held)}"
    ), (holders, line)

    def watched(yes: bool) -> None:
        assert bool(releasers(queue)) == yes

    await eventually(lambda: watched(False), 10)  # the watcher went once it had acted

    # A worker that shuts down hands nothing back (the SDK has): its watcher just goes.
    second = start_worker_process(env, tmp_path / "second.log", "--kinds", "llm", "--no-skills")
    try:
        await eventually(lambda: watched(True), 10)  # started just after "serving" is logged
    finally:
        stop_worker_process(second)
    assert "handed back" not in (tmp_path / "second.log").read_text()
    await eventually(lambda: watched(False), 10)
