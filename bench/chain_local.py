"""Benchmark: a chain of instant (no-op) agents through LeaderWorkflow against the same chain
as bare *local* activities and as bare activities (the DSL sample's shape), one dev server,
interleaved rounds, medians (best in brackets).

xsky has had no local fast path since v0.5.0 (``localTools`` is accepted and ignored): every
agent is an activity, handed back eagerly with the workflow task that schedules it. This says
what that costs against the local-activity floor.

    python bench/chain_local.py [--rounds 5] [--steps 50]

Target (issue 37, item 4): xsky's chain within 3× of bare local activities.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.worker import Worker

from bench.baselines import BareDagWorkflow, BareLocalChainWorkflow, bare_step
from bench.harness import chain, temporal, timed
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from xsky.runs import RunInput, RunOptions

TARGET = 3.0


async def main(rounds: int, steps: int) -> None:
    wf = chain(steps)
    async with temporal() as (client, queue):
        local_queue = f"{queue}-local-chain"
        worker = Worker(
            client,
            task_queue=local_queue,
            workflows=[BareLocalChainWorkflow],
            activities=[bare_step],
            workflow_runner=workflow_runner(),
        )
        serving = asyncio.create_task(worker.run())

        async def xsky() -> None:
            inp = RunInput(workflow=wf, options=RunOptions(max_parallel=1000))
            r = await client.execute_workflow(
                LeaderWorkflow.run, inp, id=f"chain-x-{uuid.uuid4().hex[:8]}", task_queue=queue
            )
            assert r.status == "completed", r.summary

        async def bare() -> None:
            await client.execute_workflow(
                BareDagWorkflow.run, wf, id=f"chain-b-{uuid.uuid4().hex[:8]}", task_queue=queue
            )

        async def local() -> None:
            await client.execute_workflow(
                BareLocalChainWorkflow.run,
                steps,
                id=f"chain-l-{uuid.uuid4().hex[:8]}",
                task_queue=local_queue,
            )

        sides = {"xsky": xsky, "bare activities": bare, "bare local activities": local}
        for side in sides.values():  # warm-up
            await side()
        got: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(rounds):
            for name, side in sides.items():
                got[name].append(await timed(side))
        await worker.shutdown()
        serving.cancel()
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"{steps}-step chain of no-op agents, {rounds} rounds interleaved (load {load})")
    for name, seconds in got.items():
        median = statistics.median(seconds)
        print(
            f"  {name:24}{median:>7.2f} s ({min(seconds):.2f} s)  {median / steps * 1000:6.1f} ms a step"
        )
    x, floor = statistics.median(got["xsky"]), statistics.median(got["bare local activities"])
    print(
        f"xsky ÷ bare local activities {x / floor:.1f}× (target ≤ {TARGET:.0f}×: "
        f"{'met' if x / floor <= TARGET else 'NOT met'}); xsky ÷ bare activities "
        f"{x / statistics.median(got['bare activities']):.2f}×"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=50)
    a = ap.parse_args()
    asyncio.run(main(a.rounds, a.steps))
