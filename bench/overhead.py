"""Benchmark: xsky's per-step overhead against bare Temporal workflows on the same server.

A 50-agent chain, 200 agents in parallel, a 200-agent fan-out and 100- and 300-agent random
DAGs of no-op agents run through LeaderWorkflow, through ``BareDagWorkflow`` (Temporal's DSL
sample's shape: a string in, "ok" out, activities on the workflow's own queue) and through
``MinimalDagWorkflow`` (the same ``run_agent`` activity as xsky, on the per-kind queue),
interleaved round by round.
Prints medians and the ratios. Target: xsky ≤ 1.05× bare on the fan-out and the DAG.

    python bench/overhead.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.baselines import BareDagWorkflow, MinimalDagWorkflow
from bench.harness import chain, fan_out, parallel, random_dag, summary, temporal, timed
from workflows.leader import LeaderWorkflow
from xsky.runs import RunInput, RunOptions

TARGET = 1.05


async def main(rounds: int) -> None:
    plans = [  # the chain50 / par200 / fan200 / dag100, and a larger DAG
        ("50-agent chain", chain(50), False),
        ("200 in parallel", parallel(200), False),
        ("200-agent fan-out", fan_out(200), True),
        ("100-agent random DAG", random_dag(100, seed=3), True),
        ("300-agent random DAG", random_dag(300, seed=3), True),
    ]
    async with temporal() as (client, queue):

        async def xsky(wf):  # type: ignore[no-untyped-def]
            result = await client.execute_workflow(
                LeaderWorkflow.run,
                RunInput(workflow=wf, options=RunOptions(max_parallel=1000)),
                id=f"bench-x-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )
            assert result.status == "completed", result.summary

        async def bare(wf):  # type: ignore[no-untyped-def]
            await client.execute_workflow(
                BareDagWorkflow.run, wf, id=f"bench-b-{uuid.uuid4().hex[:8]}", task_queue=queue
            )

        async def minimal(wf):  # type: ignore[no-untyped-def]
            await client.execute_workflow(
                MinimalDagWorkflow.run, wf, id=f"bench-m-{uuid.uuid4().hex[:8]}", task_queue=queue
            )

        for _, wf, _ in plans:  # warm-up: worker caches, first connections
            await xsky(wf)
            await bare(wf)
            await minimal(wf)
        print(f"median of {rounds} rounds, interleaved, same server and workers")
        print(
            f"{'plan':24}{'xsky':>8}{'bare':>8}{'minimal':>9}{'xsky/bare':>11}{'xsky/minimal':>14}"
        )
        worst = 0.0
        for name, wf, targeted in plans:
            xs, bs, ms = [], [], []
            for _ in range(rounds):
                xs.append(await timed(partial(xsky, wf)))
                bs.append(await timed(partial(bare, wf)))
                ms.append(await timed(partial(minimal, wf)))
            x, b, m = summary(xs), summary(bs), summary(ms)
            if targeted:
                worst = max(worst, x / b)
            print(f"{name:24}{x:>7.2f}s{b:>7.2f}s{m:>8.2f}s{x / b:>10.2f}×{x / m:>13.2f}×")
        print(
            f"target (xsky ≤ {TARGET:.2f}× bare on the fan-out and the DAG): {'met' if worst <= TARGET else 'NOT met'} (worst {worst:.2f}×)"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(ap.parse_args().rounds))
