"""Benchmark: the local store against an S3-compatible object store, side by side.

One dev server, one moto S3 server (started here: MinIO cannot be installed on these machines),
and two sets of in-process workers, one per store, each on its own task queue; the runs of the
two alternate. Two plans: (a) a 200-agent fan-out whose root returns 20 KB that each of 198
agents reads through ``{{agent_0_result}}`` and returns again, and whose sink reads all 198
through ``{{agent_N_result}}`` (4 MB); (b) the 10,000-agent random DAG of bench/scale.py. For
each: wall time (median of the rounds), the ratio S3/local, and what the run wrote to the store
(writes: objects put or appended to, and their bytes) and, for the fan-out, the attempts run
again. Every fan-out's sink result is read back and checked whole.

moto is a Python S3 server on this machine: the S3 figures bound the cost of the client and the
round trips from above, not a network's latency.

    python bench/store.py [--rounds 3] [--agents 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio.client import Client

from activities.artifacts import open_store
from activities.storage.local import LocalStore
from activities.storage.s3 import S3Store
from bench.harness import dev_server, noop_agent, random_dag, serving
from bench.scale import run_one
from tests.s3server import s3_server
from workflows.leader import LeaderWorkflow
from xsky.config import Settings, load_settings
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import RunInput, RunOptions

LINE = "a line of twenty-eight bytes"
TEXT = "".join(f"{n:05d} {LINE}\n" for n in range(572))  # 20,020 bytes, every line its own
WIDE = 198  # the agents between the root and the sink


@dataclass
class Tally:
    """Writes to one kind of store, counted as they happen (every worker runs in this process)."""

    writes: int = 0
    bytes: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()  # activities write from threads (asyncio.to_thread)

    def add(self, size: int) -> None:
        with self._lock:
            self.writes += 1
            self.bytes += size

    def now(self) -> tuple[int, int]:
        with self._lock:
            return self.writes, self.bytes


def counted(cls: type[Any]) -> Tally:
    """Count every ``put`` and ``append`` of the store class ``cls`` from now on."""
    tally = Tally()

    def wrap(method: Callable[..., None]) -> Callable[..., None]:
        def write(self: Any, key: str, data: bytes, *, sync: bool = False) -> None:
            tally.add(len(data))
            method(self, key, data, sync=sync)

        return write

    cls.put = wrap(cls.put)
    cls.append = wrap(cls.append)
    return tally


def fan_out_20k() -> Workflow:
    def noop(agent_id: str, depends: list[str], result: str) -> WorkflowAgent:
        agent = noop_agent(agent_id, depends)
        return agent.model_copy(update={"config": {**(agent.config or {}), "result": result}})

    agents = [noop("0", [], TEXT)]
    agents += [noop(str(i), ["0"], f"from {i}\n{{{{agent_0_result}}}}") for i in range(1, WIDE + 1)]
    sink = "\n".join(f"{{{{agent_{i}_result}}}}" for i in range(1, WIDE + 1))
    agents.append(noop(str(WIDE + 1), [str(i) for i in range(1, WIDE + 1)], sink))
    return Workflow(name="fanout-20k", task_id="fanout-20k", agents=agents)


SINK = "\n".join(f"from {i}\n{TEXT}" for i in range(1, WIDE + 1))


@dataclass(frozen=True)
class Arm:
    name: str
    settings: Settings
    tally: Tally


async def fan_out_run(client: Client, arm: Arm, wf: Workflow) -> dict[str, object]:
    workflow_id = f"bench-store-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    result = await client.execute_workflow(
        LeaderWorkflow.run,
        RunInput(workflow=wf, options=RunOptions(max_parallel=200)),
        id=workflow_id,
        task_queue=arm.settings.task_queue,
    )
    took = time.perf_counter() - start
    assert result.status == "completed", result.summary
    sink = next(r for r in result.agents if r.id == str(WIDE + 1))
    got = (
        sink.result
        if sink.result_ref is None
        else open_store(arm.settings).read_text(sink.result_ref)
    )
    assert got == SINK, f"{arm.name}: the sink's result is not exact ({len(got or ''):,} bytes)"
    # attempts beyond the first: an attempt the server gave up on (its heartbeat or its
    # timeout ran out while the store was slow) is run again
    return {"seconds": took, "retries": sum(max(0, r.attempts - 1) for r in result.agents)}


async def measured(arm: Arm, run: Callable[[], Awaitable[dict[str, object]]]) -> dict[str, object]:
    before = arm.tally.now()
    row = dict(await run())
    after = arm.tally.now()
    row["writes"], row["bytes"] = after[0] - before[0], after[1] - before[1]
    return row


def arm_settings(tmp: Path, name: str, address: str, extra: dict[str, str]) -> Settings:
    return load_settings(
        {
            **{k: v for k, v in os.environ.items() if not k.startswith("XSKY_")},
            "TEMPORAL_ADDRESS": address,
            "XSKY_HOME": str(tmp / name),
            "XSKY_TASK_QUEUE": f"bench-{name}-{uuid.uuid4().hex[:6]}",
            **extra,
        }
    )


async def main(rounds: int, agents: int) -> None:
    tallies = {"local": counted(LocalStore), "s3": counted(S3Store)}
    with s3_server() as s3:
        aws = s3.env(s3.bucket("xsky-bench"), "bench")
        # obstore reads the endpoint's credentials from the environment, as a worker's does.
        os.environ.update({k: v for k, v in aws.items() if k.startswith("AWS_")})
        async with dev_server() as (client, tmp):
            address = client.service_client.config.target_host
            arms = [
                Arm("local", arm_settings(tmp, "local", address, {}), tallies["local"]),
                Arm(
                    "s3",
                    arm_settings(tmp, "s3", address, {"XSKY_STORE": aws["XSKY_STORE"]}),
                    tallies["s3"],
                ),
            ]
            async with serving(client, arms[0].settings), serving(client, arms[1].settings):
                await report(client, arms, rounds, agents, aws["XSKY_STORE"], s3.endpoint)


async def report(
    client: Client, arms: list[Arm], rounds: int, agents: int, store: str, endpoint: str
) -> None:
    fan = fan_out_20k()
    big = random_dag(agents, seed=agents)
    for arm in arms:  # warm-up: worker caches, the first connections, the bucket
        await fan_out_run(client, arm, fan)
        await run_one(
            client, arm.settings.task_queue, random_dag(50, seed=1), 200, settings=arm.settings
        )
    print(f"local: {arms[0].settings.artifacts}; s3: {store} on moto at {endpoint}")
    fans: dict[str, list[dict[str, object]]] = {a.name: [] for a in arms}
    for n in range(rounds):
        for arm in arms if n % 2 == 0 else arms[::-1]:
            fans[arm.name].append(await measured(arm, partial(fan_out_run, client, arm, fan)))
            print(
                f"  fan-out round {n + 1}, {arm.name}: {num(fans[arm.name][-1], 'seconds'):.2f} s"
            )
    scales: dict[str, dict[str, object]] = {}
    for arm in arms:
        scales[arm.name] = await measured(
            arm,
            partial(run_one, client, arm.settings.task_queue, big, 200, settings=arm.settings),
        )
        assert scales[arm.name]["status"] == "completed", scales[arm.name]
        print(f"  {agents:,}-agent plan, {arm.name}: {num(scales[arm.name], 'seconds'):.1f} s")
    print()
    print(
        f"{'plan':42}{'store':>7}{'seconds':>10}{'S3/local':>10}{'writes':>9}{'written':>12}"
        f"{'retried':>9}"
    )
    for label, rows in (
        (f"200-agent fan-out, 20 KB (median of {rounds})", {k: median(v) for k, v in fans.items()}),
        (f"{agents:,}-agent random DAG", scales),
    ):
        for arm in arms:
            r = rows[arm.name]
            ratio = num(r, "seconds") / num(rows["local"], "seconds")
            print(
                f"{label:42}{arm.name:>7}{num(r, 'seconds'):>9.2f}s{ratio:>9.2f}×"
                f"{num(r, 'writes'):>9,.0f}{num(r, 'bytes') / 1e6:>9.1f} MB"
                f"{num(r, 'retries') if 'retries' in r else float('nan'):>9.0f}"
            )
            label = ""


def num(row: dict[str, object], key: str) -> float:
    value = row[key]
    assert isinstance(value, int | float), (key, value)
    return float(value)


def median(rows: list[dict[str, object]]) -> dict[str, object]:
    """The median of each figure over the rounds (writes are the same in every round)."""
    return {k: statistics.median(num(r, k) for r in rows) for k in rows[0]}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="fan-out runs per store (default 3)")
    ap.add_argument(
        "--agents", type=int, default=10_000, help="agents of the large plan (default 10,000)"
    )
    a = ap.parse_args()
    asyncio.run(main(a.rounds, a.agents))
