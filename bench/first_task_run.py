"""A large plan's first workflow task, measured in the tree this runs in (bench/first_task.py).

``python first_task_run.py AGENTS ROUNDS`` prints one JSON object: for a random DAG of AGENTS
no-op agents, started ROUNDS times on a dev server with in-process workers, how long each
run's first workflow task took (started → completed, from the history; a failed one — the SDK's
2 s deadlock detector — is counted and timed too), and the median time to replay that first
task alone (no server: the workflow side's CPU, steadier on a shared machine).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any

sys.path.insert(0, os.getcwd())  # the tree measured: this one, or the one exported from git

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from bench.harness import random_dag, temporal
from client.connect import DATA_CONVERTER
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from xsky.runs import RunInput, RunOptions

ENDED = (
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
)


def first_tasks(events: list[Any]) -> list[tuple[str, float]]:
    """Each attempt at the run's first workflow task: how it ended, and its ms."""
    found: list[tuple[str, float]] = []
    started = None
    for e in events:
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started = e.event_time.ToDatetime()
        elif e.event_type in ENDED and started is not None:
            ms = (e.event_time.ToDatetime() - started).total_seconds() * 1000
            found.append((EventType.Name(e.event_type).rsplit("_", 1)[-1].lower(), ms))
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                break
    return found


async def main(agents: int, rounds: int) -> dict[str, Any]:
    wf = random_dag(agents, seed=5)
    tasks: list[list[tuple[str, float]]] = []
    replays: list[float] = []
    async with temporal() as (client, queue):
        for _ in range(rounds):
            handle = await client.start_workflow(
                LeaderWorkflow.run,
                RunInput(workflow=wf, options=RunOptions(max_parallel=200)),
                id=f"bench-first-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )
            events: list[Any] = []
            for _ in range(240):  # up to a minute for its first task to complete
                await asyncio.sleep(0.25)
                events = list((await handle.fetch_history()).events)
                if any(e.event_type == ENDED[0] for e in events):
                    break
            await handle.terminate()
            tasks.append(first_tasks(events))
            done = next(i for i, e in enumerate(events) if e.event_type == ENDED[0])
            # the history up to its first task's commands: replayed, only that task runs
            end = done + 1
            while end < len(events) and events[end].event_type not in (
                EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
            ):
                end += 1
            history = WorkflowHistory(handle.id, events[:end])
            replayer = Replayer(
                workflows=[LeaderWorkflow],
                data_converter=DATA_CONVERTER,
                workflow_runner=workflow_runner(),
            )
            started = time.perf_counter()
            await replayer.replay_workflow(history, raise_on_replay_failure=False)
            replays.append((time.perf_counter() - started) * 1000)
    completed = [ms for attempts in tasks for how, ms in attempts if how == "completed"]
    return {
        "tree": os.getcwd(),
        "agents": agents,
        "first_task_ms": statistics.median(completed) if completed else None,
        "worst_ms": max(ms for attempts in tasks for _, ms in attempts),
        "failed": sum(1 for attempts in tasks for how, _ in attempts if how != "completed"),
        "replay_ms": statistics.median(replays),
    }


if __name__ == "__main__":
    row = asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
    print(json.dumps(row))
