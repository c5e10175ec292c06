"""Shared set-up for the Temporal benchmarks: a dev server on free ports, in-process workers.

Both sides of every comparison run on the same server, the same workers and the same
`run_agent` activity, in the same process, interleaved round by round.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.client import Client
from temporalio.worker import Worker

from activities.agents.activity import AgentActivities
from activities.agents.transcripts import flush_logs
from activities.leader_store import LeaderStore
from activities.storage import io_threads
from bench.baselines import BareDagWorkflow, LevelByLevelWorkflow, MinimalDagWorkflow, bare_step
from cli.devserver import DevServer, free_port
from client.connect import DATA_CONVERTER
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from workflows.task_time import allow_task_time
from xsky.config import Settings, load_settings
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.security.tools import build_argument_models
from xsky.wire import build_models


@asynccontextmanager
async def dev_server() -> AsyncIterator[tuple[Client, Path]]:
    """A dev server on free ports with its database in a new temporary folder (yielded too),
    removed with everything the bench put in it once the server stops."""
    tmp = Path(tempfile.mkdtemp(prefix="xsky-bench-"))
    server = DevServer(db_path=tmp / "bench.db", port=free_port(), headless=True)
    try:
        server.start(timeout=90)
        yield await Client.connect(server.address, data_converter=DATA_CONVERTER), tmp
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@asynccontextmanager
async def serving(
    client: Client, settings: Settings, same_queue: bool = True
) -> AsyncIterator[None]:
    """In-process workers for ``settings`` (its task queue, its store), as worker.py builds a
    worker that serves every kind: agents on the leader's queue too."""
    queue = settings.task_queue
    io_threads(settings)  # as worker.py: store calls in a pool sized for network I/O
    build_models()  # as worker.py: no model's validator is built inside a workflow task
    build_argument_models()  # as worker.py: nor in an agent's first tool call
    acts = AgentActivities(settings)
    # As worker.py: workflow code may run 5 s between yields, not the SDK's 2 s (a large
    # plan's first task, and its last, which writes 10,000 reports, took over 2 s on a loaded
    # VM and were failed and given again: the bench measured a worker no deployment runs).
    workers = [
        allow_task_time(
            Worker(
                client,
                task_queue=queue,
                workflows=[
                    LeaderWorkflow,
                    MinimalDagWorkflow,
                    LevelByLevelWorkflow,
                    BareDagWorkflow,
                ],
                activities=[
                    *LeaderStore(settings, agents_here=same_queue).all(),
                    acts.run_agent,
                    bare_step,
                ],
                max_cached_workflows=100,
                workflow_runner=workflow_runner(),
                max_concurrent_activities=400,
            )
        )
    ]
    workers += [
        Worker(
            client,
            task_queue=settings.kind_queue(k),
            activities=[acts.run_agent],
            max_concurrent_activities=400,
        )
        for k in TOOL_AGENT_KINDS
    ]
    tasks = [asyncio.create_task(w.run()) for w in workers]
    try:
        yield
    finally:
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
        for t in tasks:
            t.cancel()
        await asyncio.to_thread(flush_logs, 60.0)  # the agent logs' lines, before the store goes


@asynccontextmanager
async def temporal(same_queue: bool = True) -> AsyncIterator[tuple[Client, str]]:
    async with dev_server() as (client, tmp):
        os.environ["XSKY_HOME"] = str(tmp / "home")
        queue = f"bench-{uuid.uuid4().hex[:6]}"
        os.environ["XSKY_TASK_QUEUE"] = queue
        async with serving(client, load_settings(), same_queue):
            yield client, queue


def noop_agent(agent_id: str, depends: list[str], seconds: float = 0.0) -> WorkflowAgent:
    config: dict[str, object] = {"tool": "noop"}
    if seconds:
        config["seconds"] = round(seconds, 3)
    return WorkflowAgent(
        id=agent_id, name="llm", task=f"no-op {agent_id}", config=config, depends=depends
    )


def chain(n: int) -> Workflow:
    return Workflow(
        name=f"chain-{n}",
        task_id="chain",
        agents=[noop_agent(str(i), [str(i - 1)] if i else []) for i in range(n)],
    )


def parallel(n: int) -> Workflow:
    """``n`` agents that depend on nothing: all dispatched at once."""
    return Workflow(
        name=f"parallel-{n}",
        task_id="parallel",
        agents=[noop_agent(str(i), []) for i in range(n)],
    )


def fan_out(n: int) -> Workflow:
    agents = [noop_agent("root", [])] + [noop_agent(str(i), ["root"]) for i in range(n - 2)]
    agents.append(noop_agent("sink", [str(i) for i in range(n - 2)]))
    return Workflow(name=f"fanout-{n}", task_id="fanout", agents=agents)


def random_dag(
    n: int, seed: int, durations: Callable[[random.Random], float] | None = None, max_deps: int = 3
) -> Workflow:
    rng = random.Random(seed)
    agents = []
    for i in range(n):
        deps = (
            sorted(
                {str(rng.randrange(max(0, i - 20), i)) for _ in range(rng.randint(0, max_deps))},
                key=int,
            )
            if i
            else []
        )
        agents.append(noop_agent(str(i), deps, durations(rng) if durations else 0.0))
    return Workflow(name=f"random-{n}", task_id=f"random-{seed}", agents=agents)


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def summary(samples: list[float]) -> float:
    return statistics.median(samples)
