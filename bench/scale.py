"""Benchmark: plans of 100 to 10,000 no-op agents on one dev server.

Random DAGs (each agent depends on up to 3 of the 20 before it) and a 2,000-wide fan-out,
run by LeaderWorkflow with in-process workers. For each: whether it completed, agents per
second, how many times it continued as new, the largest payload anywhere in its histories
(every execution of the chain), the worker process's resident memory afterwards, the most
events and bytes one execution's history held, and how long ``starter.py status`` takes for
the run right after it ended (a new process; target ≤ 2 s at 10,000).
Targets: all complete; agents/s at 10,000 at least half of agents/s at 100; every payload
under 1 MiB.

    python bench/scale.py [--sizes 100,1000,3000,10000] [--parallel 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.client import Client

from bench.harness import fan_out, random_dag, temporal
from workflows.leader import LeaderWorkflow
from xsky.config import Settings
from xsky.plan.models import Workflow
from xsky.runs import RunInput, RunOptions

MIB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[1]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def largest_payload(history_json: str) -> int:
    largest = 0
    stack: list[object] = [json.loads(history_json)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("data"), str) and "metadata" in node:
                largest = max(largest, len(node["data"]) * 3 // 4)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return largest


async def histories(client: Client, workflow_id: str) -> tuple[int, int, int, int, int]:
    """(executions, events in all, largest payload, the most events and the most bytes one
    execution's history held) over the continue-as-new chain."""
    runs = [e async for e in client.list_workflows(f"WorkflowId='{workflow_id}'")]
    largest = events = most_events = most_bytes = 0
    for run in runs:
        history = await client.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()
        events += len(history.events)
        most_events = max(most_events, len(history.events))
        most_bytes = max(most_bytes, sum(e.ByteSize() for e in history.events))
        largest = max(largest, largest_payload(history.to_json()))
    return len(runs), events, largest, most_events, most_bytes


async def status_latency(client: Client, workflow_id: str) -> float:
    """Seconds ``starter.py status`` takes for the run just ended: a new process, as a person
    types it (an ended large run's board is read from the store, not from a replay)."""
    env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host)
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "starter.py"),
        "status",
        workflow_id,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    took = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"starter.py status failed ({proc.returncode}): {err.decode()[-500:]}")
        return float("nan")
    return took


async def run_one(
    client: Client,
    queue: str,
    wf: Workflow,
    parallel: int,
    settings: Settings | None = None,
) -> dict[str, object]:
    """One run of ``wf``, timed, with its histories' sizes. A plan over 256 KiB goes to the
    store through Temporal's External Storage (the client's data converter, which reads this
    process's store), not into the history; ``settings`` is the workers' (unused here)."""
    workflow_id = f"bench-scale-{uuid.uuid4().hex[:8]}"
    inp = RunInput(workflow=wf, options=RunOptions(max_parallel=parallel))
    start = time.perf_counter()
    result = await client.execute_workflow(
        LeaderWorkflow.run, inp, id=workflow_id, task_queue=queue
    )
    took = time.perf_counter() - start
    status_seconds = await status_latency(client, workflow_id)
    executions, events, largest, most_events, most_bytes = await histories(client, workflow_id)
    return {
        "plan": wf.name,
        "agents": len(wf.agents),
        "status": result.status,
        "seconds": took,
        "rate": len(wf.agents) / took,
        "executions": executions,
        "events": events,
        "largest": largest,
        "most_events": most_events,
        "most_bytes": most_bytes,
        "rss": rss_mib(),
        "status_seconds": status_seconds,
    }


async def main(sizes: list[int], parallel: int) -> None:
    async with temporal() as (client, queue):
        await run_one(client, queue, random_dag(50, seed=1), parallel)  # warm-up
        rows = []
        for n in sizes:
            rows.append(await run_one(client, queue, random_dag(n, seed=n), parallel))
            print(_row(rows[-1]), flush=True)
        rows.append(await run_one(client, queue, fan_out(2000), parallel))
        print(_row(rows[-1]), flush=True)
    print()
    print(
        f"{'plan':18}{'agents':>8}{'status':>11}{'seconds':>9}{'agents/s':>10}{'runs':>6}{'events':>8}{'largest payload':>17}{'RSS':>9}{'per execution at most':>26}{'status cmd':>11}"
    )
    for r in rows:
        print(_row(r))
    by_size = {r["agents"]: r for r in rows if str(r["plan"]).startswith("random")}
    small, big = by_size[min(by_size)], by_size[max(by_size)]
    ratio = float(big["rate"]) / float(small["rate"])  # type: ignore[arg-type]
    ok_all = all(r["status"] == "completed" for r in rows)
    ok_payload = all(int(r["largest"]) < MIB for r in rows)  # type: ignore[arg-type]
    print(
        f"all completed: {'yes' if ok_all else 'NO'}; agents/s at {big['agents']:,} is {ratio:.2f}× agents/s at {small['agents']:,} "
        f"(target ≥ 0.5: {'met' if ratio >= 0.5 else 'NOT met'}); largest payload "
        f"{max(int(r['largest']) for r in rows) / 1024:.0f} KiB (target < 1 MiB: {'met' if ok_payload else 'NOT met'})"
    )  # type: ignore[arg-type]


def _row(r: dict[str, object]) -> str:
    return (
        f"{str(r['plan']):18}{r['agents']:>8,}{str(r['status']):>11}{float(r['seconds']):>8.1f}s{float(r['rate']):>10.1f}"  # type: ignore[arg-type]
        f"{r['executions']:>6}{r['events']:>8,}{int(r['largest']) / 1024:>13.0f} KiB{float(r['rss']):>6.0f} MiB"  # type: ignore[arg-type]
        f"{r['most_events']:>11,} events {int(r['most_bytes']) / MIB:>6.1f} MiB"  # type: ignore[arg-type]
        f"{float(r['status_seconds']):>10.2f}s"  # type: ignore[arg-type]
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,3000,10000")
    ap.add_argument("--parallel", type=int, default=200)
    a = ap.parse_args()
    asyncio.run(main([int(x) for x in a.sizes.split(",")], a.parallel))
