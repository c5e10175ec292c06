"""Benchmark: the leader's workflow-side CPU per agent, without a server in the measurement.

Runs each shape once through LeaderWorkflow and through ``BareDagWorkflow`` (Temporal's DSL
sample's shape) on a dev server, fetches their histories, then replays each history ``--rounds``
times in this process with the workers' own sandbox (workflows/sandbox.py) and converter: a
replay runs every line of workflow code the run ran, and nothing else (no server, no activity,
no network), so the ratio is the workflow code's alone — steady on a shared, noisy machine,
where the wall-clock benches (bench/overhead.py) move by 20 % between runs.

    python bench/replay_cpu.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from bench.baselines import BareDagWorkflow
from bench.harness import chain, fan_out, parallel, temporal
from client.connect import DATA_CONVERTER
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from xsky.plan.models import Workflow
from xsky.runs import RunInput, RunOptions
from xsky.security.shell_parse import load_parser
from xsky.wire import build_models


async def histories(client: Client, queue: str, wf: Workflow) -> tuple[WorkflowHistory, ...]:
    xsky_id, bare_id = f"cpu-x-{uuid.uuid4().hex[:8]}", f"cpu-b-{uuid.uuid4().hex[:8]}"
    inp = RunInput(workflow=wf, options=RunOptions(max_parallel=1000))
    await client.execute_workflow(LeaderWorkflow.run, inp, id=xsky_id, task_queue=queue)
    await client.execute_workflow(BareDagWorkflow.run, wf, id=bare_id, task_queue=queue)
    return tuple([await client.get_workflow_handle(i).fetch_history() for i in (xsky_id, bare_id)])


async def replayed(history: WorkflowHistory, workflow: type, rounds: int) -> float:
    """The best of ``rounds`` replays of ``history``, in seconds (one first, not counted)."""
    replayer = Replayer(
        workflows=[workflow], workflow_runner=workflow_runner(), data_converter=DATA_CONVERTER
    )
    await replayer.replay_workflow(history)
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        await replayer.replay_workflow(history)
        best = min(best, time.perf_counter() - began)
    return best


async def main(rounds: int) -> None:
    build_models()  # as a worker does before it serves
    load_parser()
    shapes = [
        ("1 agent", chain(1)),
        ("200 in parallel", parallel(200)),
        ("200-agent fan-out", fan_out(200)),
    ]
    async with temporal() as (client, queue):
        recorded = [(name, wf, await histories(client, queue, wf)) for name, wf in shapes]
    print(f"workflow code's CPU per run, best of {rounds} replays (no server in it)")
    print(f"{'shape':<20}{'xsky':>10}{'bare':>10}{'ratio':>8}{'xsky/agent':>13}{'bare/agent':>13}")
    for name, wf, (mine, bare) in recorded:
        x = await replayed(mine, LeaderWorkflow, rounds)
        b = await replayed(bare, BareDagWorkflow, rounds)
        n = len(wf.agents)
        print(f"{name:<20}{x * 1000:>8.0f}ms{b * 1000:>8.0f}ms{x / b:>7.2f}×"
              f"{x * 1000 / n:>11.2f}ms{b * 1000 / n:>11.2f}ms")  # fmt: skip


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(ap.parse_args().rounds))
