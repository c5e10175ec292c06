"""Benchmark: 300 runs of 15 agents at once on 3 workers — workflow-task timeouts, and
``starter.py status`` under that load.

A dev server of its own and three real ``worker.py`` processes (leader workflows and every kind
of agent, as deployed, with the worker's own tuning); 300 runs are started together, each three
chains of five ``noop`` agents that wait 0.2–1 s; while they run, ``starter.py status`` asks for
a running run's board every second. Then every run's history is read: its workflow tasks that
timed out (start-to-close or, on a sticky queue, schedule-to-start) or failed.
Targets: 0 workflow-task timeouts, 0 failed ``status`` calls, 0 ``UnservedRunError`` (the
check ``XSky.run`` makes of each run it starts, asked of all 300 at once).

Loaded twice: with the SDK's defaults (a sticky schedule-to-start timeout of 10 s, 100
workflow task slots) and with the worker's own tuning (``XSKY_STICKY_TIMEOUT``,
``XSKY_WORKFLOW_SLOTS``), so the figures compare in one session.

    python bench/load.py [--runs 300] [--agents 15] [--workers 3] [--only-xsky]
    python bench/load.py --sticky 10 30    # the sticky wait's trade: xsky's tuning, each wait
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.client import Client, WorkflowHandle

from cli.devserver import DevServer, free_port
from client.connect import DATA_CONVERTER
from client.outcome import run_outcome
from client.workers import picked_up
from tests.integration.test_durability import start_worker_process, stop_worker_process
from workflows.leader import LeaderWorkflow
from xsky.config import load_settings
from xsky.plan.xml import parse_workflow
from xsky.runs import RunInput, RunOptions

ROOT = Path(__file__).resolve().parents[1]
CHAINS = 3


def load_plan(index: int, agents: int, rng: random.Random) -> str:
    """``agents`` noop agents in CHAINS chains (each agent after the one before it in its chain)."""
    xml = []
    for i in range(agents):
        depends = f' depends="{i - CHAINS}"' if i >= CHAINS else ""
        seconds = round(rng.uniform(0.2, 1.0), 2)
        xml.append(
            f'<agent name="llm" id="{i}"{depends}><task>load {i}</task>'
            f'<config>{{"tool": "noop", "seconds": {seconds}}}</config></agent>'
        )
    return f'<workflow name="load-{index}" taskId="load-{index}">{"".join(xml)}</workflow>'


async def status_calls(
    env: dict[str, str], ids: list[str], done: asyncio.Event
) -> list[tuple[float, int, str]]:
    """``starter.py status`` on a random run every second until ``done``: (seconds, exit code, last line)."""
    calls = []
    rng = random.Random(7)
    while not done.is_set():
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "starter.py"),
            "status",
            rng.choice(ids),
            "--limit",
            "5",
            env=env,
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        said = (err or out).decode().strip().splitlines()
        calls.append((time.monotonic() - started, proc.returncode or 0, said[-1] if said else ""))
        await asyncio.sleep(1.0)
    return calls


async def task_troubles(
    handle: WorkflowHandle[Any, Any], waits: list[float], spans: list[float]
) -> Counter[str]:
    """The workflow tasks of every execution of a run that timed out or failed, by kind; each
    task's wait on its queue (scheduled → started) goes to ``waits`` and its time on the
    worker (started → completed, failed or timed out) to ``spans``, in seconds."""
    found: Counter[str] = Counter()
    scheduled: dict[int, float] = {}
    started: dict[int, float] = {}
    async for event in handle.fetch_history_events():
        at = event.event_time.ToNanoseconds() / 1e9
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            scheduled[event.event_id] = at
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started[event.event_id] = at
            since = scheduled.get(event.workflow_task_started_event_attributes.scheduled_event_id)
            if since is not None:
                waits.append(at - since)
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            since = started.get(event.workflow_task_completed_event_attributes.started_event_id)
            if since is not None:
                spans.append(at - since)
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            kind = event.workflow_task_timed_out_event_attributes.timeout_type
            found[
                f"timed out ({TimeoutType.Name(kind).removeprefix('TIMEOUT_TYPE_').lower()})"
            ] += 1
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            found["failed"] += 1
    return found


def spread(values: list[float]) -> str:
    """Median, 95th percentile and most of ``values`` (seconds), as text."""
    if not values:
        return "none"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered):.2f}s, p95 {p95:.2f}s, max {ordered[-1]:.1f}s"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# What is compared: the SDK's defaults, and the worker's own tuning (xsky/config.py).
TUNINGS = {
    "Temporal's defaults (sticky 10 s, 100 workflow slots)": {
        "XSKY_STICKY_TIMEOUT": "10",
        "XSKY_WORKFLOW_SLOTS": "100",
    },
    "xsky's (XSKY_STICKY_TIMEOUT, XSKY_WORKFLOW_SLOTS)": {},
}


async def one_load(args: argparse.Namespace, name: str, tuning: dict[str, str]) -> bool:
    """One load with the workers tuned so (``tuning``: their environment); prints its
    figures; True when the targets are met."""
    tmp = Path(tempfile.mkdtemp(prefix="xsky-load-"))
    server = DevServer(
        db_path=tmp / "load.db", port=free_port(), headless=True, log_path=tmp / "server.log"
    )
    server.start(timeout=90)
    queue = f"load-{uuid.uuid4().hex[:6]}"
    env = dict(
        os.environ,
        TEMPORAL_ADDRESS=server.address,
        XSKY_TASK_QUEUE=queue,
        XSKY_HOME=str(tmp / "home"),
        PYTHONUNBUFFERED="1",
        **tuning,
    )
    workers = [
        start_worker_process(env, tmp / f"worker{i}.log", "--no-skills")
        for i in range(args.workers)
    ]
    try:
        client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
        rng = random.Random(1)
        plans = [parse_workflow(load_plan(i, args.agents, rng)) for i in range(args.runs)]
        load_before = os.getloadavg()[0]
        cpu_before = [cpu_seconds(w.pid) for w in workers]
        began = time.monotonic()
        handles = await asyncio.gather(
            *(
                client.start_workflow(
                    LeaderWorkflow.run,
                    RunInput(workflow=wf, options=RunOptions(max_parallel=CHAINS)),
                    id=f"xsky-load-{i}-{uuid.uuid4().hex[:6]}",
                    task_queue=queue,
                )
                for i, wf in enumerate(plans)
            )
        )
        started = time.monotonic() - began
        done = asyncio.Event()
        asking = asyncio.create_task(status_calls(env, [h.id for h in handles], done))
        # What XSky.run asks of each run it starts: was its first task picked up (or is a
        # worker busy on its queue)? False raises UnservedRunError — here always a false alarm.
        checks = asyncio.gather(*(picked_up(client, h.id) for h in handles))
        results = await asyncio.gather(*(run_outcome(h) for h in handles))
        unserved = sum(not served for served in await checks)
        elapsed = time.monotonic() - began
        load_after = os.getloadavg()[0]
        busy = [cpu_seconds(w.pid) - c for w, c in zip(workers, cpu_before, strict=True)]
        done.set()
        calls = await asking
        troubles: Counter[str] = Counter()
        waits: list[float] = []
        spans: list[float] = []
        for counted in await asyncio.gather(*(task_troubles(h, waits, spans) for h in handles)):
            troubles.update(counted)
    finally:
        for w in workers:
            stop_worker_process(w)
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    completed = sum(r.status == "completed" for r in results)
    agents = args.runs * args.agents
    latencies = [c[0] for c in calls]
    failed_calls = [c for c in calls if c[1] != 0]
    print(f"{name}:")
    print(
        f"  started in {started:.1f}s; all ended in {elapsed:.1f}s ({agents / elapsed:.0f} agents/s)"
    )
    print(f"  load average (1 min) {load_before:.1f} at the start, {load_after:.1f} at the end")
    print(
        "  workers' CPU while loaded: "
        + ", ".join(f"{b:.0f} s ({b / elapsed:.0%} of a core)" for b in busy)
    )
    print(f"  completed: {completed} of {args.runs}")
    print(f"  workflow tasks: {len(spans)}; waited to start {spread(waits)}")
    print(f"  on the worker (started → completed): {spread(spans)}")
    print(f"  UnservedRunError (every one false: a worker served each run): {unserved}")
    print(f"  workflow tasks timed out or failed: {sum(troubles.values())} {dict(troubles)}")
    if latencies:
        print(
            f"  starter.py status: {len(calls)} calls, {len(failed_calls)} failed, "
            f"median {statistics.median(latencies):.1f}s, max {max(latencies):.1f}s"
        )
    for call in failed_calls[:5]:
        print(f"    failed: {call[2]}")
    return completed == args.runs and not troubles and not failed_calls and not unserved


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--agents", type=int, default=15)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--only-xsky", action="store_true", help="load with xsky's tuning only")
    ap.add_argument(
        "--sticky",
        type=int,
        nargs="+",
        metavar="SECONDS",
        help="instead: xsky's tuning with each of these sticky timeouts, side by side",
    )
    args = ap.parse_args()
    settings = load_settings()
    print(
        f"{args.runs} runs × {args.agents} agents on {args.workers} workers ({os.cpu_count()} "
        f"cores); xsky's tuning: sticky {settings.sticky_timeout:g} s, "
        f"{settings.workflow_slots} workflow slots"
    )
    if args.sticky:  # every load is xsky's tuning: each must meet the targets
        tunings = [(f"sticky {s} s", {"XSKY_STICKY_TIMEOUT": str(s)}) for s in args.sticky]
    else:  # the last is xsky's own tuning: the one the targets are for
        tunings = [(n, t) for n, t in TUNINGS.items() if not (args.only_xsky and t)]
    met = [await one_load(args, name, tuning) for name, tuning in tunings]
    ok = all(met) if args.sticky else met[-1]
    print("target met" if ok else "target NOT met", "(with xsky's tuning)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
