"""Benchmark: makespan ÷ critical path, xsky's DAG scheduler against a level-by-level executor.

Random DAGs whose agents sleep for random durations run through LeaderWorkflow and
through LevelByLevelWorkflow (the seed's tree: a level waits for its slowest agent).
The ideal makespan is the weighted critical path; the ratio says how close each gets.
Target: xsky ≤ 1.10.

    python bench/makespan.py [--dags 3] [--agents 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import uuid
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.baselines import LevelByLevelWorkflow
from bench.harness import random_dag, temporal, timed
from workflows.leader import LeaderWorkflow
from xsky.plan import dag
from xsky.runs import RunInput, RunOptions


async def main(dags: int, agents: int) -> None:
    async with temporal() as (client, queue):
        rows = []
        for seed in range(dags):
            wf = random_dag(
                agents,
                seed=100 + seed,
                durations=lambda r: r.choice([0.2, 0.5, 1.0, 2.0, 3.0]) * r.random() + 0.1,
                max_deps=2,
            )
            weights = {a.id: float(a.config["seconds"]) for a in wf.agents}  # type: ignore[index]
            critical, _ = dag.critical_path(wf, weights)
            x = await timed(
                partial(
                    client.execute_workflow,
                    LeaderWorkflow.run,
                    RunInput(workflow=wf, options=RunOptions(max_parallel=1000)),
                    id=f"mk-x-{uuid.uuid4().hex[:8]}",
                    task_queue=queue,
                )
            )
            lv = await timed(
                partial(
                    client.execute_workflow,
                    LevelByLevelWorkflow.run,
                    wf,
                    id=f"mk-l-{uuid.uuid4().hex[:8]}",
                    task_queue=queue,
                )
            )
            rows.append((seed, len(dag.levels(wf)), critical, x, lv))
        print(
            f"{agents}-agent random DAGs, agents sleep 0.1–3.1 s; ratio = makespan ÷ weighted critical path"
        )
        print(
            f"{'dag':>4}{'levels':>8}{'critical':>10}{'xsky':>9}{'ratio':>7}{'levels-exec':>13}{'ratio':>7}"
        )
        for seed, nlev, critical, x, lv in rows:
            print(
                f"{seed:>4}{nlev:>8}{critical:>9.2f}s{x:>8.2f}s{x / critical:>6.2f}×{lv:>12.2f}s{lv / critical:>6.2f}×"
            )
        xr = statistics.median(r[3] / r[2] for r in rows)
        lr = statistics.median(r[4] / r[2] for r in rows)
        print(
            f"median ratio: xsky {xr:.2f}×, level-by-level {lr:.2f}×  (level-by-level takes {lr / xr:.2f}× as long)"
        )
        print(f"target (xsky ≤ 1.10): {'met' if xr <= 1.10 else 'NOT met'}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dags", type=int, default=3)
    ap.add_argument("--agents", type=int, default=40)
    args = ap.parse_args()
    asyncio.run(main(args.dags, args.agents))
