"""A 200-agent fan-out of no-ops, on the local store and on S3, with every store call counted.

Run by bench/store_ops.py (once with this tree, once with the code it is compared with,
exported from git): ``python store_ops_fanout.py ROUNDS`` prints one JSON object — for each
store, the median wall time of the runs and the store calls of one run (reads, writes: the
leader's and the agents' together, every worker in this process). One dev server, in-process
workers for each store on a queue of its own (bench/harness.py), the runs of the two
alternating; the S3 server is the one ``XSKY_BENCH_S3`` names, or one started here (moto).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.getcwd())  # the tree measured: this one, or the one exported from git

from bench.harness import dev_server, noop_agent, serving
from bench.store_ops_attempt import s3_endpoint
from tests.counting_store import READS, WRITES
from workflows.leader import LeaderWorkflow
from xsky.config import Settings, load_settings
from xsky.plan.models import Workflow
from xsky.runs import RunInput, RunOptions

WIDE = 198  # the agents between the root and the sink


def fan_out() -> Workflow:
    agents = [noop_agent("0", [])]
    agents += [noop_agent(str(i), ["0"]) for i in range(1, WIDE + 1)]
    agents.append(noop_agent(str(WIDE + 1), [str(i) for i in range(1, WIDE + 1)]))
    return Workflow(name="fanout-noop", task_id="fanout-noop", agents=agents)


class Calls:
    """Every call of the store classes, by name (each worker's store is an instance of one)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def install(self, cls: type[Any]) -> None:
        for name in READS | WRITES:
            method = getattr(cls, name)
            setattr(cls, name, self._counted(name, method))

    def _counted(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(store: Any, *args: Any, **kw: Any) -> Any:
            with self._lock:
                self.counts[name] += 1
            return method(store, *args, **kw)

        return call

    def now(self) -> Counter[str]:
        with self._lock:
            return Counter(self.counts)


def arm_settings(tmp: Path, name: str, address: str, extra: dict[str, str]) -> Settings:
    return load_settings(
        {
            **{k: v for k, v in os.environ.items() if not k.startswith("XSKY_")},
            "TEMPORAL_ADDRESS": address,
            "XSKY_HOME": str(tmp / name),
            "XSKY_TASK_QUEUE": f"ops-{name}-{uuid.uuid4().hex[:6]}",
            **extra,
        }
    )


async def one_run(client: Any, settings: Settings) -> float:
    start = time.perf_counter()
    result = await client.execute_workflow(
        LeaderWorkflow.run,
        RunInput(workflow=fan_out(), options=RunOptions(max_parallel=200)),
        id=f"ops-fanout-{uuid.uuid4().hex[:8]}",
        task_queue=settings.task_queue,
    )
    assert result.status == "completed", result.summary
    return time.perf_counter() - start


async def main(rounds: int) -> dict[str, Any]:
    from activities.storage.local import LocalStore
    from activities.storage.s3 import S3Store

    calls = {"local": Calls(), "s3": Calls()}
    calls["local"].install(LocalStore)
    calls["s3"].install(S3Store)
    with s3_endpoint() as s3:
        aws = s3.env(s3.bucket(f"fanout-{uuid.uuid4().hex[:8]}"), "bench")
        os.environ.update({k: v for k, v in aws.items() if k.startswith("AWS_")})
        async with dev_server() as (client, tmp):
            address = client.service_client.config.target_host
            arms = {
                "local": arm_settings(tmp, "local", address, {}),
                "s3": arm_settings(tmp, "s3", address, {"XSKY_STORE": aws["XSKY_STORE"]}),
            }
            async with serving(client, arms["local"]), serving(client, arms["s3"]):
                for settings in arms.values():  # warm-up: caches, connections, the bucket
                    await one_run(client, settings)
                seconds: dict[str, list[float]] = {name: [] for name in arms}
                used: dict[str, Counter[str]] = {}
                for n in range(rounds):
                    for name in arms if n % 2 == 0 else list(arms)[::-1]:
                        before = calls[name].now()
                        seconds[name].append(await one_run(client, arms[name]))
                        used[name] = calls[name].now() - before
    row: dict[str, Any] = {}
    for name in ("local", "s3"):
        counts = used[name]
        row[name] = {
            "seconds": statistics.median(seconds[name]),
            "reads": sum(v for k, v in counts.items() if k in READS),
            "writes": sum(v for k, v in counts.items() if k in WRITES),
            "calls": dict(sorted(counts.items())),
        }
    row["ratio"] = row["s3"]["seconds"] / row["local"]["seconds"]
    import activities

    row["tree"] = str(Path(activities.__file__).parents[1])
    return row


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))))
