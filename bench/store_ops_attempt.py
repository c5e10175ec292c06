"""One kind of agent attempt, run again and again, with every call to its store counted.

Run by bench/store_ops.py (once with this tree, once with the code it is compared with,
exported from git): ``python store_ops_attempt.py KIND STORE ROUNDS`` prints one JSON object —
the store calls of each attempt (reads, writes, and by name), and, on S3, the requests the
client made (PUT, GET, HEAD, LIST, DELETE). KIND is ``noop`` (an instant no-op), ``shell``
(``echo hi``) or ``model`` (a model agent of three iterations, two tool calls, against the
scripted OpenAI-compatible server of tests/fake_llm.py); STORE is ``local`` or ``s3`` (moto).
Each attempt is the first of a dispatch of its own, through the ``run_agent`` activity itself,
in the SDK's ActivityEnvironment (no server: the store is what is measured).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, os.getcwd())  # the tree measured: this one, or the one exported from git

from temporalio.testing import ActivityEnvironment

from tests.counting_store import READS, WRITES, CountingStore
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.s3server import S3Server, s3_server

CONFIGS: dict[str, dict[str, Any] | None] = {
    "noop": {"tool": "noop"},
    "shell": {"tool": "shell", "command": "echo hi"},
    "model": None,  # no tool: the configured model runs the agent
}
ROLES = {"noop": "shell", "shell": "shell", "model": "file"}


def scripted(request: dict[str, Any], index: int) -> Reply:
    """Three model calls: write a file, read it back, answer."""
    turn = turn_of(request)
    if turn == 0:
        return calls(("file_write", {"path": "notes.txt", "content": "three steps"}))
    if turn == 1:
        return calls(("file_read", {"path": "notes.txt"}))
    return text("the notes say: three steps")


class S3Requests:
    """The requests the S3 client makes, by kind (obstore's calls, wrapped)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def install(self) -> None:
        from activities.storage import s3

        real = s3.obstore
        counts = self.counts

        class Counted:
            def __getattr__(self, name: str) -> Any:
                fn = getattr(real, name)
                if name not in ("put", "get", "head", "list", "delete"):
                    return fn

                def call(*args: Any, **kw: Any) -> Any:
                    counts[name.upper()] += 1
                    return fn(*args, **kw)

                return call

        s3.obstore = Counted()  # type: ignore[assignment]


def environment() -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        activity_id="T-1-v1-d1",
        heartbeat_timeout=timedelta(seconds=10),
        start_to_close_timeout=timedelta(seconds=120),
        schedule_to_close_timeout=None,
        started_time=datetime.now(UTC),
        workflow_id=None,  # not scheduled by a leader: no progress signals, no nudges query
    )
    env.on_heartbeat = lambda *details: None
    return env


def measure(kind: str, where: str, rounds: int, env_vars: dict[str, str]) -> dict[str, Any]:
    from activities.agents.activity import AgentActivities
    from xsky.config import load_settings
    from xsky.plan.models import WorkflowAgent
    from xsky.runs import AgentInput

    settings = load_settings(env_vars)
    acts = AgentActivities(settings)
    counting = CountingStore(acts.store.objects)
    acts.store.objects = counting
    per: list[dict[str, int]] = []
    seconds: list[float] = []
    requests: list[dict[str, int]] = []
    s3 = S3Requests()
    if where == "s3":
        s3.install()
    run = uuid.uuid4().hex[:8]

    async def attempts() -> None:  # one event loop, as a worker's
        for n in range(rounds + 1):  # the first round warms up (imports, caches, connections)
            agent = WorkflowAgent(id=f"a{n}", name=ROLES[kind], task="do it", config=CONFIGS[kind])
            # (markers=[]: a leader names the stored results it hands an agent, none here)
            inp = AgentInput(
                run_id=f"run-{run}", task_id=f"T-{n}", agent=agent, dispatch=1, markers=[]
            )
            counting.reset()
            s3.counts.clear()
            started = time.perf_counter()
            outcome = await environment().run(acts.run_agent, inp)
            took = time.perf_counter() - started
            await asyncio.to_thread(flush_logs)
            assert outcome.kind == "completed", outcome
            if n == 0:
                continue
            seconds.append(took)
            per.append(dict(counting.calls))
            requests.append(dict(s3.counts))
        await acts.close()

    asyncio.run(attempts())

    def mean(rows: list[dict[str, int]], pick: Callable[[str], bool]) -> float:
        return statistics.fmean(sum(v for k, v in row.items() if pick(k)) for row in rows)

    names = sorted({k for row in per for k in row})
    return {
        "kind": kind,
        "store": where,
        "reads": mean(per, lambda k: k in READS),
        "writes": mean(per, lambda k: k in WRITES),
        "calls": {k: statistics.fmean(row.get(k, 0) for row in per) for k in names},
        "requests": {
            k: statistics.fmean(row.get(k, 0) for row in requests)
            for k in sorted({k for row in requests for k in row})
        },
        "ms": statistics.median(seconds) * 1000,
    }


def flush_logs() -> None:
    """Agent-log lines on their way to an object store (writer threads) are counted too."""
    from activities.agents import transcripts

    transcripts.flush_logs(10.0)


def main() -> None:
    kind, where, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        user = Path(tmp) / "settings.json"
        user.write_text(json.dumps({"security": {"sandbox": "off"}}))
        env_vars = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("XSKY_", "OPENAI_"))},
            "XSKY_HOME": str(home),
            "XSKY_USER_SETTINGS": str(user),
            "XSKY_PROJECT_DIR": str(Path(tmp) / "project"),
        }
        fake = FakeLLM()
        fake.responder = scripted
        if kind == "model":
            env_vars |= {"XSKY_MODEL": "fake-model", "OPENAI_BASE_URL": fake.base_url}
        try:
            if where == "s3":
                with s3_endpoint() as server:
                    bucket = server.bucket(f"ops-{uuid.uuid4().hex[:8]}")
                    aws = server.env(bucket)
                    os.environ.update({k: v for k, v in aws.items() if k.startswith("AWS_")})
                    row = measure(kind, where, rounds, env_vars | aws)
            else:
                row = measure(kind, where, rounds, env_vars)
        finally:
            fake.close()
    import activities

    row["tree"] = str(Path(activities.__file__).parents[1])  # the code that was measured
    print(json.dumps(row))


@contextmanager
def s3_endpoint() -> Iterator[S3Server]:
    """The S3 server bench/store_ops.py started (``XSKY_BENCH_S3``), or one of its own."""
    given = os.environ.get("XSKY_BENCH_S3")
    if given:
        yield S3Server(given)
        return
    with s3_server() as server:
        yield server


if __name__ == "__main__":
    main()
