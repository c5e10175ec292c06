"""Benchmark: where a plan's time goes in its workflow tasks, read from the histories.

The 200-agent fan-out (or ``--agents N``) runs through LeaderWorkflow and the two baselines
of bench/overhead.py (``MinimalDagWorkflow``: the same ``run_agent`` and ``AgentInput``;
``BareDagWorkflow``: a string in, "ok" out), interleaved round by round on one dev server.
From each history it prints the medians of: the run's wall time (first to last event), its
events, its workflow tasks, the time the worker spent in them (started → completed), and the
longest one (the task that schedules the fan-out). The server's work follows the events;
the worker's workflow-side CPU is the workflow-task time. Then each kind's last history is
replayed (no server, one thread: the workflow-side CPU alone, steadier than wall times on a
shared machine) in the workers' sandbox (workflows/sandbox.py) and in the SDK's own.

    python bench/workflow_tasks.py [--rounds 7] [--agents 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from bench.baselines import BareDagWorkflow, MinimalDagWorkflow
from bench.harness import fan_out, temporal
from client.connect import DATA_CONVERTER
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from xsky.plan.models import Workflow
from xsky.runs import RunInput, RunOptions

COLUMNS = ("wall ms", "events", "WFTs", "WFT ms", "longest WFT ms")


def measured(events: list[Any]) -> tuple[float, int, int, float, float]:
    """(wall ms, events, workflow tasks, ms in them, the longest one's ms) of one history."""
    tasks: list[float] = []
    started = None
    for e in events:
        at = e.event_time.ToDatetime()
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started = at
        elif e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and started:
            tasks.append((at - started).total_seconds() * 1000)
    wall = (events[-1].event_time.ToDatetime() - events[0].event_time.ToDatetime()).total_seconds()
    return wall * 1000, len(events), len(tasks), sum(tasks), max(tasks, default=0.0)


def starters(
    client: Client, queue: str, wf: Workflow
) -> dict[str, Callable[[str], Awaitable[WorkflowHandle[Any, Any]]]]:
    return {
        "xsky": lambda i: client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=RunOptions(max_parallel=1000)),
            id=i,
            task_queue=queue,
        ),
        "minimal": lambda i: client.start_workflow(
            MinimalDagWorkflow.run, wf, id=i, task_queue=queue
        ),
        "bare": lambda i: client.start_workflow(BareDagWorkflow.run, wf, id=i, task_queue=queue),
    }


async def replayed(runner: WorkflowRunner, history: WorkflowHistory, times: int = 5) -> float:
    """Median ms to replay ``history`` in ``runner``."""
    replayer = Replayer(
        workflows=[LeaderWorkflow, MinimalDagWorkflow, BareDagWorkflow],
        data_converter=DATA_CONVERTER,
        workflow_runner=runner,
    )
    await replayer.replay_workflow(history)  # warm
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        await replayer.replay_workflow(history)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def main(rounds: int, agents: int) -> None:
    wf = fan_out(agents)
    rows: dict[str, list[tuple[float, int, int, float, float]]] = {}
    histories: dict[str, WorkflowHistory] = {}
    async with temporal() as (client, queue):
        kinds = starters(client, queue, wf)
        for round_ in range(rounds + 1):  # the first round warms up
            for name, start in kinds.items():
                handle = await start(f"bench-wft-{name}-{uuid.uuid4().hex[:8]}")
                await handle.result()
                if round_:
                    histories[name] = await handle.fetch_history()
                    rows.setdefault(name, []).append(measured(list(histories[name].events)))
    print(f"{agents}-agent fan-out, median of {rounds} rounds, interleaved, one server")
    print(f"{'':10}" + "".join(f"{c:>16}" for c in COLUMNS))
    for name, samples in rows.items():
        medians = [statistics.median(s[i] for s in samples) for i in range(len(COLUMNS))]
        print(f"{name:10}" + "".join(f"{m:>16,.1f}" for m in medians))
    x, m = rows["xsky"], rows["minimal"]
    ratio = statistics.median(s[3] for s in x) / statistics.median(s[3] for s in m)
    print(f"xsky's workflow-task time: {ratio:.2f}× the minimal workflow's")
    print("replay of the last history (ms, median of 5): the workers' sandbox · the SDK's own")
    for name, history in histories.items():
        ours = await replayed(workflow_runner(), history)
        sdks = await replayed(SandboxedWorkflowRunner(), history)
        print(f"{name:10}{ours:>16,.1f}{sdks:>16,.1f}   ({len(history.events)} events)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--agents", type=int, default=200)
    args = ap.parse_args()
    asyncio.run(main(args.rounds, args.agents))
