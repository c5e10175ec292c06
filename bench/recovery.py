"""Benchmark: how long an agent waits after its worker is lost (killed or stopped), under load.

Real ``worker.py`` processes on a dev server of its own: two leader workers, and two shell
workers that also run a background load of other runs' commands. A probe run's shell agent
writes the wall-clock time of every attempt's start to its workspace, leaves a double-forked
child behind that would do a side effect 3 s later, and sleeps; the bench loses the worker
running it and measures **recovery** = the retry's start − the moment of the loss.

- ``kill``: SIGKILL the worker, ``--kills`` times (median and max);
- ``successive``: one agent whose worker is killed ``--successive`` times in a row (the last
  kill's recovery shows whether lost-worker retries back off);
- ``stop``: SIGSTOP the worker (hung, not dead), ``--stops`` times;
- ``leader``: SIGKILL the *leader's* worker that holds a two-step probe while its first step
  runs, ``--leader-kills`` times, with a second leader worker serving; **recovery** = the
  second step's start − the first step's end. The run's next workflow task is queued on the
  dead worker's sticky queue and waits out the sticky timeout (``XSKY_STICKY_TIMEOUT``, 10 s).

A replacement worker is started after each loss, so two shell workers serve at all times.
After every lost attempt the bench checks that its escaped child never did its side effect.
Target: every median, and the 10th successive kill, ≤ 12 s (the default heartbeat timeout is
10 s; the lost attempt is retried after a flat 1 s).

    python bench/recovery.py [--kills 5] [--successive 10] [--stops 3] [--leader-kills 5] [--load 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from cli.devserver import DevServer, free_port
from client.connect import DATA_CONVERTER
from tests.integration.test_durability import start_worker_process, stop_worker_process
from tests.integration.test_recovery import descendants
from workflows.leader import LeaderWorkflow
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput, RunOptions

TARGET = 12.0
CANARY_DELAY = 3  # seconds the escaped child waits before its side effect
WAIT = 120.0  # seconds any single step may take before the bench gives up


def probe_command(succeed_on_retry: bool) -> str:
    # The attempt's start in wall-clock time (the bench's clock is the same machine's). No
    # command substitution: the permission checker would (rightly) ask a person about it.
    stamp = "date +%s.%N >> attempts; "
    finish = "if test -e started; then echo retried; exit 0; fi; " if succeed_on_retry else ""
    escape = f"touch started; (setsid sh -c 'sleep {CANARY_DELAY}; touch canary-setsid' &); "
    return stamp + finish + escape + "sleep 600"


def shell_plan(name: str, command: str) -> str:
    cfg = json.dumps({"tool": "shell", "command": command})
    return (
        f'<workflow name="{name}" taskId="{name}"><agent name="shell" id="1"><task>probe</task>'
        f"<config><![CDATA[{cfg}]]></config></agent></workflow>"
    )


def load_plan(index: int, steps: int) -> str:
    agents = "".join(
        f'<agent name="shell" id="{i}"'
        + (f' depends="{i - 1}"' if i else "")
        + f"><task>load</task><config><![CDATA[{json.dumps({'tool': 'shell', 'command': 'sleep 1'})}]]></config></agent>"
        for i in range(steps)
    )
    return f'<workflow name="load-{index}" taskId="load-{index}">{agents}</workflow>'


@dataclass
class Bench:
    client: Client
    env: dict[str, str]
    home: Path
    queue: str
    logs: Path
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    leaders: list[subprocess.Popen[bytes]] = field(default_factory=list)
    spawned: int = 0

    def _start(self, name: str, into: list[subprocess.Popen[bytes]], *args: str) -> None:
        self.spawned += 1
        into.append(start_worker_process(self.env, self.logs / f"{name}-{self.spawned}.log", *args))

    def start_leader_worker(self) -> None:
        self._start("leader", self.leaders, "--kinds", "llm", "--no-skills")

    def start_shell_worker(self) -> None:
        self._start("shell", self.workers, "--kinds", "shell", "--no-leader", "--no-skills")

    async def start(self, plan: str, workflow_id: str) -> WorkflowHandle[LeaderWorkflow, object]:
        wf = parse_workflow(plan)
        return await self.client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=RunOptions(max_auto_replans=0, max_parallel=4)),
            id=workflow_id,
            task_queue=self.queue,
        )

    def workspace(self, run_id: str) -> Path:
        return self.home / "runs" / run_id / "workspace"

    def running(self) -> subprocess.Popen[bytes] | None:
        """The shell worker whose sandbox runs a probe's ``sleep 600``."""
        for proc in self.workers:
            if proc.poll() is not None:
                continue
            for pid in descendants(proc.pid):
                try:
                    line = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if line.startswith(b"sleep\x00600"):
                    return proc
        return None

    async def lose(self, sig: signal.Signals) -> tuple[subprocess.Popen[bytes], float]:
        """Wait for a worker to run the probe, lose it with ``sig``, start a replacement."""
        deadline = time.monotonic() + WAIT
        while (proc := self.running()) is None:
            if time.monotonic() > deadline:
                raise SystemExit("no shell worker ran the probe within 120 s")
            await asyncio.sleep(0.05)
        lost_at = time.time()
        proc.send_signal(sig)
        self.workers.remove(proc)
        if sig == signal.SIGKILL:
            proc.wait()
        self.start_shell_worker()  # takes a few seconds: it overlaps the recovery
        return proc, lost_at

    async def next_attempt(self, attempts: Path, count: int) -> float:
        """The wall-clock start of the ``count``-th attempt, once it has started."""
        deadline = time.monotonic() + WAIT
        while True:
            lines = attempts.read_text().split() if attempts.exists() else []
            if len(lines) >= count:
                return float(lines[count - 1])
            if time.monotonic() > deadline:
                raise SystemExit(f"attempt {count} of the probe never started")
            await asyncio.sleep(0.05)


def escaped(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.glob("canary-*"))


async def kill_once(b: Bench, sig: signal.Signals, label: str) -> float:
    run_id = f"probe-{label}-{uuid.uuid4().hex[:6]}"
    handle = await b.start(shell_plan(run_id, probe_command(succeed_on_retry=True)), run_id)
    attempts = b.workspace(run_id) / "attempts"
    proc, lost_at = await b.lose(sig)
    retried = await b.next_attempt(attempts, 2)
    await asyncio.wait_for(handle.result(), WAIT)
    if sig == signal.SIGSTOP:  # done with it: a stopped worker is killed, never resumed here
        proc.kill()
        proc.wait()
    await asyncio.sleep(max(0.0, CANARY_DELAY + 1 - (time.time() - lost_at)))
    if escaped(b.workspace(run_id)):
        raise SystemExit(f"{label}: a child of the lost worker did its side effect")
    return retried - lost_at


async def successive(b: Bench, kills: int) -> list[float]:
    run_id = f"probe-successive-{uuid.uuid4().hex[:6]}"
    handle = await b.start(shell_plan(run_id, probe_command(succeed_on_retry=False)), run_id)
    attempts = b.workspace(run_id) / "attempts"
    out = []
    for n in range(1, kills + 1):
        _, lost_at = await b.lose(signal.SIGKILL)
        out.append(await b.next_attempt(attempts, n + 1) - lost_at)
    await handle.cancel()
    await asyncio.sleep(CANARY_DELAY + 1)
    if escaped(b.workspace(run_id)):
        raise SystemExit("successive: a child of a killed worker did its side effect")
    return out


async def last_taken_by(client: Client, workflow_id: str, run_id: str) -> str:
    """The identity of the worker that took the run's newest workflow task ('' if none did)."""
    taken = ""
    async for event in client.get_workflow_handle(
        workflow_id, run_id=run_id
    ).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            taken = str(event.workflow_task_started_event_attributes.identity)
    return taken


def two_steps(name: str) -> str:
    first = json.dumps({"tool": "shell", "command": "touch begun; sleep 2; date +%s.%N > ended"})
    second = json.dumps({"tool": "shell", "command": "date +%s.%N > started"})
    return (
        f'<workflow name="{name}" taskId="{name}">'
        f'<agent name="shell" id="1"><task>first</task><config><![CDATA[{first}]]></config></agent>'
        f'<agent name="shell" id="2" depends="1"><task>second</task>'
        f"<config><![CDATA[{second}]]></config></agent></workflow>"
    )


async def leader_kill(b: Bench, label: str) -> float:
    """Kill the leader worker that holds a two-step probe during its first step; the wait
    between the steps."""
    run_id = f"probe-{label}-{uuid.uuid4().hex[:6]}"
    handle = await b.start(two_steps(run_id), run_id)
    workspace = b.workspace(run_id)
    deadline = time.monotonic() + WAIT
    while not (workspace / "begun").exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{label}: the probe's first step never started")
        await asyncio.sleep(0.05)
    described = await handle.describe()
    holder = await last_taken_by(b.client, run_id, described.run_id)
    (proc,) = [p for p in b.leaders if holder.startswith(f"{p.pid}@")]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    b.leaders.remove(proc)
    await asyncio.wait_for(handle.result(), WAIT)
    b.start_leader_worker()
    ended = float((workspace / "ended").read_text())
    return float((workspace / "started").read_text()) - ended


def line(name: str, samples: list[float]) -> str:
    med = statistics.median(samples)
    return (
        f"{name:<28}{len(samples):>4}{med:>9.1f}s{max(samples):>8.1f}s"
        f"{med / TARGET:>9.2f}×   " + " ".join(f"{s:.1f}" for s in samples)
    )


async def main(kills: int, in_a_row: int, stops: int, leader_kills: int, load: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="xsky-recovery-"))
    home, logs = tmp / "home", tmp / "logs"
    logs.mkdir()
    queue = f"recovery-{uuid.uuid4().hex[:6]}"
    server = DevServer(db_path=tmp / "recovery.db", port=free_port(), headless=True)
    server.start(timeout=90)
    env = dict(os.environ)
    env.update(
        TEMPORAL_ADDRESS=server.address,
        XSKY_TASK_QUEUE=queue,
        XSKY_HOME=str(home),
        PYTHONUNBUFFERED="1",
    )
    os.environ.update(env)
    client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
    b = Bench(client, env, home, queue, logs)
    b.start_leader_worker()
    b.start_leader_worker()
    loads: list[WorkflowHandle[LeaderWorkflow, object]] = []
    try:
        b.start_shell_worker()
        b.start_shell_worker()
        for i in range(load):
            loads.append(await b.start(load_plan(i, 400), f"load-{i}-{uuid.uuid4().hex[:6]}"))
        killed = [await kill_once(b, signal.SIGKILL, f"kill{i}") for i in range(kills)]
        row = await successive(b, in_a_row) if in_a_row else []
        stopped = [await kill_once(b, signal.SIGSTOP, f"stop{i}") for i in range(stops)]
        leaders = [await leader_kill(b, f"leader{i}") for i in range(leader_kills)]
    finally:
        for h in loads:
            try:
                await h.cancel()
            except Exception:  # noqa: BLE001 — the bench ends either way
                pass
        for proc in [*b.workers, *b.leaders]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                stop_worker_process(proc)
        server.stop()
    print(
        f"recovery after a lost worker: retry start − loss; 2 shell workers, {load} load runs of "
        "`sleep 1` steps, default heartbeat timeout (10 s)"
    )
    print(f"{'case':<28}{'n':>4}{'median':>10}{'max':>9}{'÷ 12 s':>10}   samples")
    checks = []
    if killed:
        print(line("SIGKILL", killed))
        checks.append(statistics.median(killed))
    if row:
        print(line(f"{in_a_row} kills in a row", row))
        print(f"{'  the last of them':<28}{'':>4}{row[-1]:>9.1f}s")
        checks.append(row[-1])
    if stopped:
        print(line("SIGSTOP", stopped))
        checks.append(statistics.median(stopped))
    if leaders:
        print(line("leader's worker SIGKILL", leaders))
        checks.append(statistics.median(leaders))
    print("no escaped child of a lost worker did its side effect")
    print(f"target (each ≤ {TARGET:.0f} s): {'met' if max(checks) <= TARGET else 'NOT met'}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--successive", type=int, default=10)
    ap.add_argument("--stops", type=int, default=3)
    ap.add_argument("--leader-kills", type=int, default=5)
    ap.add_argument("--load", type=int, default=4)
    args = ap.parse_args()
    asyncio.run(main(args.kills, args.successive, args.stops, args.leader_kills, args.load))
