"""Benchmark: xsky's scheduling overhead against a minimal hand-written Temporal workflow.

A 50-agent chain, a 200-agent fan-out and a 300-agent random DAG of no-op agents run
through LeaderWorkflow and through MinimalDagWorkflow (same activities, same dependency
order) on the same server and workers, interleaved. Prints medians and the ratio.
Target: xsky ≤ 1.25× the minimal workflow.

    python bench/overhead.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.baselines import MinimalDagWorkflow  # noqa: E402
from bench.harness import chain, fan_out, random_dag, summary, temporal, timed  # noqa: E402
from workflows.leader import LeaderWorkflow  # noqa: E402
from xsky.runs import RunInput, RunOptions  # noqa: E402


async def main(rounds: int) -> None:
    plans = [("50-agent chain", chain(50)), ("200-agent fan-out", fan_out(200)), ("300-agent random DAG", random_dag(300, seed=3))]
    async with temporal() as (client, queue):

        async def xsky(wf):  # type: ignore[no-untyped-def]
            result = await client.execute_workflow(
                LeaderWorkflow.run, RunInput(workflow=wf, options=RunOptions(max_parallel=1000)),
                id=f"bench-x-{uuid.uuid4().hex[:8]}", task_queue=queue,
            )
            assert result.status == "completed", result.summary

        async def minimal(wf):  # type: ignore[no-untyped-def]
            await client.execute_workflow(MinimalDagWorkflow.run, wf, id=f"bench-m-{uuid.uuid4().hex[:8]}", task_queue=queue)

        for _, wf in plans:  # warm-up: worker caches, first connections
            await xsky(wf)
            await minimal(wf)
        print(f"median of {rounds} rounds, interleaved, same server and workers")
        print(f"{'plan':24}{'xsky':>10}{'minimal':>10}{'ratio':>8}")
        worst = 0.0
        for name, wf in plans:
            xs, ms = [], []
            for _ in range(rounds):
                xs.append(await timed(lambda: xsky(wf)))
                ms.append(await timed(lambda: minimal(wf)))
            ratio = summary(xs) / summary(ms)
            worst = max(worst, ratio)
            print(f"{name:24}{summary(xs):>9.2f}s{summary(ms):>9.2f}s{ratio:>7.2f}×")
        print(f"target (xsky ≤ 1.25× minimal): {'met' if worst <= 1.25 else 'NOT met'} (worst {worst:.2f}×)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(ap.parse_args().rounds))
