"""Benchmark: what the OS sandbox costs.

1. Starting ``true`` through the shell tool's process runner, sandboxed (bubblewrap) and
   unsandboxed, interleaved, many times: the median extra milliseconds per call.
   Target: ≤ 30 ms extra.
2. A 200-agent plan of shell agents (``echo``) through LeaderWorkflow, on the same server
   and workers, with the sandbox on and off (settings ``security.sandbox``), interleaved:
   the makespan ratio.

    python bench/sandbox.py [--calls 100] [--rounds 3] [--agents 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.sandbox.bwrap import Confinement, identity, ready
from activities.sandbox.workspace import make
from activities.tools import ToolContext
from activities.tools.shell import run_process
from bench.harness import summary, temporal, timed
from workflows.leader import LeaderWorkflow
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import RunInput, RunOptions


async def process_cost(calls: int) -> tuple[float, float]:
    # A workspace as the worker makes one (owned by the sandbox user) in a folder it can
    # reach: the common case, where no path needs staging.
    base = Path(tempfile.mkdtemp(prefix="xsky-bench-sandbox-"))
    base.chmod(0o755)
    who = identity()
    ws = make(base / "workspace", *((who.uid, who.gid) if who.drop else (None, None)))
    confined = ToolContext(
        "bench",
        "1",
        ws,
        None,
        None,
        lambda n: None,  # type: ignore[arg-type]
        confinement=Confinement(workspace=ws),
    )
    plain = ToolContext("bench", "1", ws, None, None, lambda n: None, unconfined=True)  # type: ignore[arg-type]
    on, off = [], []
    for _ in range(5):  # warm-up: page cache, the bwrap binary
        await run_process(confined, ["true"], 10, 1024)
        await run_process(plain, ["true"], 10, 1024)
    for _ in range(calls):
        start = time.perf_counter()
        await run_process(confined, ["true"], 10, 1024)
        on.append(time.perf_counter() - start)
        start = time.perf_counter()
        await run_process(plain, ["true"], 10, 1024)
        off.append(time.perf_counter() - start)
    return statistics.median(on) * 1000, statistics.median(off) * 1000


def shell_plan(n: int) -> Workflow:
    agents = [
        WorkflowAgent(
            id=str(i),
            name="shell",
            task=f"echo {i}",
            config={"tool": "shell", "command": f"echo {i}"},
        )
        for i in range(n)
    ]
    return Workflow(name=f"shell-{n}", task_id="shell", agents=agents)


async def makespans(rounds: int, agents: int) -> tuple[float, float]:
    project = Path(tempfile.mkdtemp(prefix="xsky-bench-project-"))
    settings_file = project / "worker-settings.json"  # a worker's security settings: its own file
    os.environ["XSKY_USER_SETTINGS"] = str(settings_file)
    wf = shell_plan(agents)
    async with temporal() as (client, queue):

        async def run(sandbox: str) -> None:
            settings_file.write_text(json.dumps({"security": {"sandbox": sandbox}}))
            result = await client.execute_workflow(
                LeaderWorkflow.run,
                RunInput(workflow=wf, options=RunOptions(max_parallel=50)),
                id=f"bench-sb-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )
            assert result.status == "completed", result.summary

        await run("on")
        await run("off")
        on, off = [], []
        for _ in range(rounds):
            on.append(await timed(lambda: run("on")))
            off.append(await timed(lambda: run("off")))
    return summary(on), summary(off)


async def main(calls: int, rounds: int, agents: int) -> None:
    problem = ready()
    if problem:
        print(f"no sandbox here: {problem}")
        return
    sandboxed, plain = await process_cost(calls)
    extra = sandboxed - plain
    print(
        f"starting `true` ({calls} calls each, interleaved): sandboxed {sandboxed:.1f} ms, unsandboxed {plain:.1f} ms, "
        f"extra {extra:.1f} ms (median)"
    )
    print(f"target (≤ 30 ms extra per call): {'met' if extra <= 30 else 'NOT met'}")
    on, off = await makespans(rounds, agents)
    print(
        f"{agents}-agent shell plan, median of {rounds} rounds: sandbox on {on:.2f}s, off {off:.2f}s, ratio {on / off:.2f}×"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--agents", type=int, default=200)
    args = ap.parse_args()
    asyncio.run(main(args.calls, args.rounds, args.agents))
