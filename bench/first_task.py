"""Benchmark: a large plan's first workflow task against the SDK's 2 s deadline, before and
after the v0.11.1 changes, side by side.

A run's first workflow task decodes its input (the whole plan), builds its state (a task per
agent, the plan's first version as XML) and schedules its set-up. The SDK fails a workflow
task whose code does not yield within 2 s ("potential deadlock") and Temporal tries it again,
so on a slow or loaded machine a plan large enough never starts. For random DAGs of 10,000
and 30,000 no-op agents this prints, for the code before (``BEFORE``, exported from git) and
this tree, each in a process of its own: the median first task (live, from the histories),
the worst attempt, how many attempts failed, and the median replay of that task alone; and
the share of the 2 s deadline the median takes.

    python bench/first_task.py [--rounds 3] [--agents 10000 30000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import store_ops

BEFORE = "37c79ac"  # main's head before the first task was made cheaper (v0.11.1)
DEADLINE_MS = 2000.0  # the SDK's deadlock detector


def main(rounds: int, sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="xsky-first-task-") as tmp:
        trees = {
            "before": store_ops.exported(
                BEFORE, Path(tmp) / "before", ("bench/first_task_run.py",)
            ),
            "after": store_ops.ROOT,
        }
        print(f"before: {BEFORE} (exported); after: {store_ops.ROOT}; {rounds} runs each\n")
        print(
            f"{'agents':>8}{'':8}{'first task':>12}{'of 2 s':>8}{'worst':>10}{'failed':>8}"
            f"{'replay':>10}"
        )
        for agents in sizes:
            for side, tree in trees.items():
                row = store_ops.measured(
                    tree, "bench/first_task_run.py", str(agents), str(rounds), endpoint=""
                )
                first = row["first_task_ms"]
                print(
                    f"{agents:>8,}{side:>8}"
                    f"{'—' if first is None else f'{first:,.0f} ms':>12}"
                    f"{'' if first is None else f'{first / DEADLINE_MS:.0%}':>8}"
                    f"{row['worst_ms']:>7,.0f} ms{row['failed']:>8}"
                    f"{row['replay_ms']:>7,.0f} ms"
                )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--agents", type=int, nargs="+", default=[10_000, 30_000])
    args = ap.parse_args()
    main(args.rounds, args.agents)
