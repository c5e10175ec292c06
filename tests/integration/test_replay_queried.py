"""A queried leader replays: runs whose boards are queried all along (what ``starter.py
status``, ``--follow`` and the live page do) are replayed offline from their recorded histories —
every execution of every run, continued as new with the state by reference, and with the
leader's worker killed three times, once while a state is written.

Queries are what made such histories fail when instant no-ops ran as local activities: a
query answered while a local activity runs makes the SDK record the local result in one
workflow task and give it to the workflow in the next, and a replay gives it in the first
(``Attempts.settle_local``; before patch ``local-results-next-task`` about one run in four of
the first test failed here). Since v0.5.0 (patch ``local-tools-off``) no run starts a local
activity; the histories of runs that did replay in test_replay.py (``local_settled_v0.*``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from activities.artifacts import ArtifactStore, read_blob
from cli.devserver import DevServer, free_port
from client.outcome import run_outcome
from tests.conftest import ROOT
from tests.integration.helpers import noop, plan
from tests.integration.test_durability import STICKY_WAIT, own_server, start_worker_process
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from xsky.config import load_settings
from xsky.leader.state import PageRequest
from xsky.plan.xml import parse_workflow
from xsky.runs import AgentReport, RunInput, RunOptions, RunResult

pytestmark = pytest.mark.integration


def waves(n: int, width: int, slow_every: int = 3) -> str:
    """Waves `width` wide, each agent after one or two of the wave before: most instant
    no-ops, every `slow_every`-th (if any) one of 60 ms, so agents end in varied orders."""
    agents = []
    for i in range(1, n + 1):
        deps = [str(i - width)] if i > width else []
        if i > width + 1 and i % 2:
            deps.append(str(i - width - 1))
        slow = slow_every > 0 and i % slow_every == 0
        agents.append(noop(str(i), 0.06 if slow else 0, depends=",".join(deps)))
    return plan(*agents, name="waves")


@contextlib.asynccontextmanager
async def queried(handle: WorkflowHandle, every: float) -> AsyncIterator[list[int]]:
    """Query the run's board every `every` seconds while the block runs; yields [answered]."""
    answered = [0]

    # Asked as xsky's askers ask (``Settings.query_timeout``, under the sticky wait): a query
    # that outwaits it reaches a worker that took the run over as a legacy query, which
    # sdk-core mishandles (test_query_deadline.py) — that made one run in 8–15 of the 3,000-
    # agent test below fail to replay. (The sticky wait is the workers': XSKY_STICKY_TIMEOUT.)
    query_timeout = load_settings().query_timeout

    async def poll() -> None:
        while True:
            with contextlib.suppress(Exception):  # a query may meet a dead worker: ask again
                await handle.query(
                    LeaderWorkflow.task_board, PageRequest(limit=5), rpc_timeout=query_timeout
                )
                answered[0] += 1
            await asyncio.sleep(every)

    task = asyncio.create_task(poll())
    try:
        yield answered
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def replay_all(client: Client, workflow_ids: list[str]) -> tuple[dict[str, int], list[str]]:
    """Replay every execution of these runs: (executions replayed per run, the failures)."""
    replayer = Replayer(
        workflows=[LeaderWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),  # the workers' sandbox (workflows/sandbox.py)
        # No 2-second deadlock detector here: this test asks whether the histories replay, and
        # in `make test` this process also runs hypothesis's tests, whose collector callback
        # once made a loaded machine's replay of a large execution take over 2 s — the
        # replayer then failed that task and waited until the test's timeout (300 s).
        debug_mode=True,
    )
    counts: dict[str, int] = dict.fromkeys(workflow_ids, 0)
    failures: list[str] = []
    for wid in workflow_ids:
        async for ex in client.list_workflows(f"WorkflowId='{wid}'"):
            history = await client.get_workflow_handle(wid, run_id=ex.run_id).fetch_history()
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            counts[wid] += 1
            if result.replay_failure is not None:
                # XSKY_TEST_REPLAY_DUMP=<dir>: a history that failed is kept there (JSON, as
                # `temporal workflow show -o json` writes it) to be replayed and diffed offline.
                if dump := os.environ.get("XSKY_TEST_REPLAY_DUMP"):
                    Path(dump).mkdir(parents=True, exist_ok=True)
                    (Path(dump) / f"{wid}-{ex.run_id}.json").write_text(history.to_json())
                failures.append(f"{wid}/{ex.run_id}: {result.replay_failure}")
    return counts, failures


def exact(result: RunResult, n: int, store: ArtifactStore) -> bool:
    """Completed, and every agent's result is its own: r1 … rN."""
    reports = result.agents
    if result.results_ref is not None:  # a large run's reports are in the store
        reports = [
            AgentReport.model_validate_json(line)
            for line in read_blob(store, result.results_ref).splitlines()
        ]
    texts = {
        a.id: a.result if a.result is not None else store.read_text(a.result_ref) for a in reports
    }
    return result.status == "completed" and texts == {str(i): f"r{i}" for i in range(1, n + 1)}


# Continue as new every ~80 events, the state in parts (inline limit 1 KiB): each run
# crosses several executions.
CAN_EVERY_80 = ("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=80")


async def test_queried_runs_replay_every_execution_without_nondeterminism(
    tmp_path: Path, monkeypatch
):
    async with own_server(tmp_path, monkeypatch, "qry", CAN_EVERY_80) as (_, client, settings):
        n = 240
        wf = parse_workflow(waves(n, 20))
        handles = [
            await client.start_workflow(
                LeaderWorkflow.run,
                RunInput(
                    workflow=wf,
                    options=RunOptions(max_parallel=20, inline_limit=1024),
                ),
                id=f"xsky-qry-{i}-{uuid.uuid4().hex[:6]}",
                task_queue=settings.task_queue,
            )
            for i in range(
                4
            )  # ~35 executions between them (6 runs made ~51: a minute of the suite)
        ]
        async with contextlib.AsyncExitStack() as stack:
            answered = [await stack.enter_async_context(queried(h, 0.1)) for h in handles]
            results = await asyncio.wait_for(
                asyncio.gather(*(run_outcome(h) for h in handles)), 180
            )
        store = ArtifactStore(settings.artifacts)
        for r in results:
            assert exact(r, n, store), (r.status, len(r.agents), r.agents[:2])
        assert all(a[0] >= 10 for a in answered), f"too few queries answered: {answered}"
        counts, failures = await replay_all(client, [h.id for h in handles])
        assert failures == [], "\n".join(failures)
        # How many executions a run takes depends on how many events each workflow task
        # batches (timing); that every run continued as new at least once does not.
        single = [wid for wid, c in counts.items() if c < 2]
        assert single == [], f"runs that never continued as new: {single} ({counts})"
        assert sum(counts.values()) >= 20, f"fewer than 20 histories replayed: {counts}"
        print(f"{sum(counts.values())} executions of {len(handles)} queried runs replayed")


def start_slow_worker(environ: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """The real worker in its own process (to SIGKILL), writing each state part in 0.2 s."""
    script = ROOT / "tests" / "integration" / "slow_store_worker.py"
    return start_worker_process(environ, log, "--no-skills", script=script)


async def completed(handle: WorkflowHandle) -> int:
    # Asked with xsky's deadline too: asked without one right after a kill (reach(), every
    # 0.2 s), a query waited out the dead worker's sticky queue and was sent on to the worker
    # that took the run over with the history past its last workflow task — the SDK bug this
    # test's replay catches, made by the test itself (chaos12).
    with contextlib.suppress(Exception):
        page = await handle.query(
            LeaderWorkflow.task_board,
            PageRequest(limit=1),
            rpc_timeout=load_settings().query_timeout,  # (under the workers' sticky wait)
        )
        return page.counts.get("completed", 0)
    return -1


async def killed_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    n: int,
    width: int,
    can_after: int,
    query_every: float,
    thirds: bool,
    sticky: str | None = None,
) -> tuple[list[str], int]:
    """A run of `n` local no-ops in waves `width` wide, queried every `query_every` s, whose
    leader worker is SIGKILLed while a state is written for continue-as-new (the server
    suggests it every `can_after` events) and, with `thirds`, a third and two thirds of the
    way in. With `sticky`, the workers' sticky wait (XSKY_STICKY_TIMEOUT): how long a killed
    worker's run waits before another worker takes it. Asserts every result exact and every
    execution replaying; returns what happened when, and how many executions were replayed."""
    server = DevServer(
        db_path=tmp_path / "kill.db",
        port=free_port(),
        headless=True,
        log_path=tmp_path / "server.log",
        extra_args=(
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={can_after}",
        ),
    )
    server.start(timeout=90)
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "xsky"))
    monkeypatch.setenv("XSKY_TASK_QUEUE", f"k{uuid.uuid4().hex[:6]}")
    monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
    monkeypatch.setenv("XSKY_TEST_PUT_DELAY", "0.2")
    if sticky is not None:
        monkeypatch.setenv("XSKY_STICKY_TIMEOUT", sticky)
    settings = load_settings()
    environ = dict(os.environ)
    wf = parse_workflow(waves(n, width, slow_every=0))
    logs = tmp_path / "workers"
    logs.mkdir()
    worker = start_slow_worker(environ, logs / "w0.log")
    try:
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(
                workflow=wf,
                options=RunOptions(max_parallel=width, inline_limit=1024),
            ),
            id=f"xsky-kill-{uuid.uuid4().hex[:6]}",
            task_queue=settings.task_queue,
        )
        kills: list[str] = []
        phases: list[str] = []
        t0 = time.monotonic()

        def kill_and_replace(why: str) -> None:
            nonlocal worker
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            kills.append(why)
            phases.append(f"{time.monotonic() - t0:.0f}s killed {why}")
            worker = start_slow_worker(environ, logs / f"w{len(kills)}.log")

        async def reach(fraction: float) -> None:
            while await completed(handle) < n * fraction:
                assert time.monotonic() < deadline, f"the run did not get {fraction:.0%} of the way"
                await asyncio.sleep(0.2)

        async with queried(handle, query_every):
            deadline = time.monotonic() + 300
            if thirds:
                await reach(1 / 3)
                kill_and_replace("a third done")
            # While a state is written for continue-as-new (each part takes 0.2 s).
            while not any(
                p.activity_type.name == "leader_put"
                for p in (await handle.describe()).raw_description.pending_activities
            ):
                assert time.monotonic() < deadline, "the run never wrote its state"
                await asyncio.sleep(0.05)
            kill_and_replace("while the state was written")
            if thirds:
                await reach(2 / 3)
                kill_and_replace("two thirds done")
            result = await asyncio.wait_for(run_outcome(handle), 300)
        phases.append(f"{time.monotonic() - t0:.0f}s completed")
        assert len(kills) == (3 if thirds else 1)
        assert exact(result, n, ArtifactStore(settings.artifacts)), result.status
        counts, failures = await replay_all(client, [handle.id])
        assert failures == [], "\n".join(failures)
        return phases, counts[handle.id]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        server.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


@pytest.mark.timeout(300)
async def test_a_queried_run_killed_while_writing_its_state_completes_and_replays(
    tmp_path: Path, monkeypatch
):
    """In `make test`: 300 local no-ops queried every 100 ms, continued as new with the state
    by reference, the leader's worker killed while it writes a state. Its run waits 3 s for
    another worker, not the default 10 (test_durability's STICKY_WAIT): what it checks does
    not depend on the wait, and the queries' deadline follows it."""
    phases, count = await killed_run(
        tmp_path, monkeypatch, 300, 30, 80, 0.1, thirds=False, sticky=STICKY_WAIT
    )
    print(f"300 agents: {'; '.join(phases)}; {count} executions replayed")
    assert count >= 2, f"only {count} execution: the run never continued as new"


@pytest.mark.chaos  # two minutes on two cores: `make chaos`, not `make test`
@pytest.mark.timeout(900)  # its run may take 300 s, the kills and restarts more
async def test_a_3000_agent_run_queried_every_second_survives_three_leader_kills_one_mid_state_write(
    tmp_path: Path, monkeypatch
):
    phases, count = await killed_run(tmp_path, monkeypatch, 3000, 150, 800, 1.0, thirds=True)
    print(f"3000 agents: {'; '.join(phases)}; {count} executions replayed")
    assert count >= 3, f"only {count} executions: the run continued as new less than twice"
