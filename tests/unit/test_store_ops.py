"""What an attempt costs its store — every call is a request someone pays for on S3 — and the
guarantees that cost keeps: one durable write per attempt (its outcome, result and ledger line
together, and its log's lines once), no read before a dispatch's first attempt, a lease renewed
at the heartbeat cadence, and still nothing done twice when a worker is lost.

Through the ``run_agent`` activity itself (the SDK's ActivityEnvironment: no server), with its
store wrapped in a counting one (tests/counting_store.py), on the local directory and on S3
(moto); real commands, a real worker process killed just after its command ended."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity

from activities.agents import lease as leases
from activities.agents.activity import INLINE_ONLY, AgentActivities
from activities.agents.beat import Beat
from activities.agents.key import AgentKey
from activities.agents.lease import Lease
from activities.agents.ledger import AttemptLedger, first_of_dispatch, reroute_of
from activities.agents.transcripts import flush_logs, read_log
from activities.sandbox import watchdog
from activities.storage.local import LocalStore
from tests.counting_store import CountingStore
from tests.s3server import S3Server, s3_server
from tests.sigkill import kill_after
from tests.unit.attempt_runner import environment, run
from xsky.agent_log import parse_lines, render_event, transcript_key
from xsky.config import load_settings
from xsky.plan.models import WorkflowAgent
from xsky.runs import AgentInput

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


def settings_env(tmp_path: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    user = tmp_path / "settings.json"
    user.write_text(json.dumps({"security": {"sandbox": "off"}}))
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("XSKY_", "OPENAI_"))},
        "XSKY_HOME": str(tmp_path / "home"),
        "XSKY_USER_SETTINGS": str(user),
        "XSKY_PROJECT_DIR": str(tmp_path / "project"),
        **(extra or {}),
    }


def store_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A new bucket of the module's S3 server: a worker's variables for it (its credentials set
    in this process too, for the test's own time)."""
    server: S3Server = request.getfixturevalue("s3")
    extra = server.env(server.bucket(f"b-{uuid.uuid4().hex[:12]}"))
    for name, value in extra.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)  # obstore reads the credentials itself
    return extra


@pytest.fixture(params=["local", "s3"])
def acts(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AgentActivities]:
    """The activities of a worker whose store counts its calls."""
    extra = store_env(request, monkeypatch) if request.param == "s3" else {}
    made = AgentActivities(load_settings(settings_env(tmp_path, extra)))
    made.store.objects = CountingStore(made.store.objects)
    yield made
    asyncio.run(made.close())


def counted(acts: AgentActivities) -> CountingStore:
    store = acts.store.objects
    assert isinstance(store, CountingStore)
    return store


def agent_input(config: dict[str, Any] | None, agent_id: str = "a1", **kw: Any) -> AgentInput:
    agent = WorkflowAgent(id=agent_id, name="shell", task="do it", config=config)
    return AgentInput(run_id="run-1", task_id=f"T-{agent_id}", agent=agent, **kw)


def log_of(acts: AgentActivities, inp: AgentInput) -> list[dict[str, Any]]:
    """The agent's log as its reader sees it (with the lines kept outcomes carry)."""
    assert flush_logs(10)
    log = read_log(counted(acts).inner, inp.run_id, inp.agent.id, inp.execution_id, {})
    return parse_lines(log.decode())


# -- the budget ---------------------------------------------------------------------------------


async def test_an_instant_noop_or_gather_reads_and_writes_nothing(acts: AgentActivities):
    for n, config in enumerate(({"tool": "noop"}, {"tool": "gather", "items": ["a", "b"]})):
        inp = agent_input(config, agent_id=f"a{n}")
        counted(acts).reset()
        outcome = await run(acts, inp)
        assert flush_logs(10)
        store = counted(acts)
        assert (store.reads, store.writes) == (0, 0), store.log  # not even a log line
        assert outcome.result_ref is None  # inline only: the run's history holds it all
        assert log_of(acts, inp) == []
    assert outcome.result == '["a", "b"]'


async def test_a_short_shell_attempt_writes_its_outcome_and_log_and_reads_nothing(
    acts: AgentActivities,
):
    """No lease: it ended before a later attempt could exist (lease.first_write_after: 15 s
    into an attempt with a 60 s heartbeat timeout — a loaded machine's first command, which
    builds the watchdog, can take seconds). On S3 its log's lines travel in its kept outcome:
    one request in all."""
    inp = agent_input({"tool": "shell", "command": "echo hi"})
    outcome = await run(acts, inp, heartbeat=60.0)
    assert flush_logs(10)
    store = counted(acts)
    assert store.reads == 0, store.log
    ledger = AttemptLedger.of(store.inner, AgentKey.of(inp))
    log_key = transcript_key(inp.run_id, inp.agent.id)
    assert [call for call in store.log if call[1] != log_key] == [("put", ledger.outcome_key)]
    appends = [call for call in store.log if call[1] == log_key]
    # Locally its log's lines follow in one append. On S3 none — but one, should the attempt
    # last past the log's batch interval (2 s: a loaded machine's first command builds the
    # watchdog); the lines after it still travel with the outcome.
    local = store.inner.local(log_key) is not None
    assert (1 <= len(appends) <= 2) if local else len(appends) <= 1, store.log
    assert {name for name, _ in appends} <= {"append"}, store.log
    carried = json.loads(store.inner.get(ledger.outcome_key)).get("log")
    if local:
        assert carried is None
    else:  # its last lines, its outcome's among them, are in its one write
        assert '"type": "outcome"' in carried and carried.endswith("\n"), carried
    kinds = [e["type"] for e in log_of(acts, inp)]
    assert kinds == ["attempt", "tool_call", "permission", "permission", "tool_result", "outcome"]
    assert outcome.result == "hi" and outcome.result_ref is None
    kept = ledger.outcome()
    assert kept is not None and kept.result == "hi" and kept.attempt == 1
    assert [(e["attempt"], e["kind"]) for e in ledger.entries()] == [(1, "completed")]


async def test_a_calls_permission_is_logged_when_it_is_decided_before_the_call_runs(
    acts: AgentActivities,
):
    # (it was written with the call's result, stamped when the command had ended: as if the
    # command had run before it was allowed)
    inp = agent_input({"tool": "shell", "command": "sleep 0.5; echo done"})
    await run(acts, inp, heartbeat=60.0)
    lines = log_of(acts, inp)
    kinds = [e["type"] for e in lines]
    assert kinds == ["attempt", "tool_call", "permission", "permission", "tool_result", "outcome"]
    at = {e["type"]: datetime.fromisoformat(e["at"]) for e in lines}  # (a kind's last line)
    assert (at["tool_result"] - at["permission"]).total_seconds() >= 0.4, lines


async def test_a_stopped_attempt_ends_its_log_with_a_line_saying_so(acts: AgentActivities):
    # (a paused agent's log went from its command straight to its next dispatch)
    inp = agent_input({"tool": "shell", "command": "sleep 30"})
    env = environment(heartbeat=60.0)
    attempt = asyncio.create_task(env.run(acts.run_agent, inp))
    await asyncio.sleep(1.0)
    env.cancel()
    with pytest.raises(asyncio.CancelledError):
        await attempt
    lines = log_of(acts, inp)
    last = lines[-1]
    assert last["type"] == "outcome" and last["status"] == "stopped", last
    assert "stopped by its leader" in last["error"] and last["ms"] >= 900, last
    assert [e["type"] for e in lines].count("outcome") == 1  # (one end, this one)
    assert "None" not in render_event(last, 200), render_event(last, 200)


async def test_an_attempt_its_worker_stopped_gracefully_says_so_not_that_it_was_lost(
    acts: AgentActivities,
):
    # (a rolling upgrade's SIGTERM: the board said "worker lost: no heartbeat (killed, …)")
    inp = agent_input({"tool": "shell", "command": "sleep 30"})
    env = environment(heartbeat=60.0)
    attempt = asyncio.create_task(env.run(acts.run_agent, inp))
    await asyncio.sleep(1.0)
    env.cancel(activity.ActivityCancellationDetails(worker_shutdown=True))
    with pytest.raises(asyncio.CancelledError):
        await attempt
    ledger = AttemptLedger.of(counted(acts).inner, AgentKey.of(inp))
    ends = [(e["attempt"], e["kind"], e["reason"]) for e in ledger.entries()]
    assert ends == [(1, "worker lost", "its worker shut down; the attempt runs again elsewhere")]
    again = AttemptLedger.of(counted(acts).inner, AgentKey.of(inp)).begin(2, 60.0)
    assert again.previous == "worker lost: its worker shut down; the attempt runs again elsewhere"


async def test_a_result_over_the_inline_size_is_stored_once_and_a_small_one_is_not(
    acts: AgentActivities,
):
    big = "x" * (INLINE_ONLY + 1)
    inp = agent_input({"tool": "noop", "result": big})
    outcome = await run(acts, inp)
    store = counted(acts)
    assert store.calls["put"] == 1 and store.reads == 0
    assert outcome.result == big and outcome.result_ref is not None  # inline, and stored
    assert acts.store.read_text(outcome.result_ref) == big
    over = agent_input({"tool": "noop", "result": big}, agent_id="a2", artifact_threshold=10)
    stored = await run(acts, over, activity_id="T-a2-v1-d1")
    assert stored.result is None and stored.result_ref is not None  # only stored


# -- what a retry still finds ----------------------------------------------------------------------


async def test_a_retry_returns_the_outcome_its_first_attempt_kept_and_runs_nothing(
    acts: AgentActivities, tmp_path: Path
):
    effects = acts.settings.runs / "run-1" / "workspace" / "effects.txt"
    inp = agent_input({"tool": "shell", "command": "echo effect >> effects.txt; echo done"})
    first = await run(acts, inp)
    second = await run(acts, inp, attempt=2)  # its report was lost: Temporal retried it
    assert (first.result, second.result, second.attempt) == ("done", "done", 2)
    assert effects.read_text() == "effect\n"
    ledger = AttemptLedger.of(counted(acts).inner, AgentKey.of(inp))
    kinds = [(e["attempt"], e["kind"]) for e in ledger.entries()]
    assert kinds == [(1, "completed"), (2, "started"), (2, "returned")]


async def test_an_attempt_sent_again_to_another_host_looks_for_what_the_one_before_kept(
    acts: AgentActivities,
):
    """Attempt 1 of an activity the leader sent again (an ``-r<n>`` id) is no first attempt:
    the activity before it may have kept an outcome."""
    effects = acts.settings.runs / "run-1" / "workspace" / "effects.txt"
    inp = agent_input({"tool": "shell", "command": "echo effect >> effects.txt; echo done"})
    await run(acts, inp)
    store = counted(acts)
    store.reset()
    again = await run(acts, inp, activity_id="T-a1-v1-d1-r1")
    assert again.result == "done" and effects.read_text() == "effect\n"
    assert store.reads > 0
    assert reroute_of("T-a1-v1-d1-r1") == 1 and reroute_of("T-a1-v1-d1") == 0
    assert first_of_dispatch(1, "T-a1-v1-d1") and not first_of_dispatch(1, "T-a1-v1-d1-r2")
    assert not first_of_dispatch(2, "T-a1-v1-d1") and not first_of_dispatch(1, "elsewhere")


async def test_a_failed_attempt_releases_its_lease_and_a_kept_outcome_leaves_it(
    acts: AgentActivities,
):
    """Attempts that last past their lease's first write (a quarter of a 1 s heartbeat
    timeout); one that fails sooner has no lease and touches none."""
    from temporalio.exceptions import ApplicationError

    ok = agent_input({"tool": "shell", "command": "sleep 0.8; true"})
    await run(acts, ok, heartbeat=1.0)
    store = counted(acts).inner
    assert store.exists(AttemptLedger.of(store, AgentKey.of(ok)).lease_key)  # settled: left
    bad = agent_input({"tool": "shell", "command": "sleep 0.8; exit 3"}, agent_id="a2")
    with pytest.raises(ApplicationError):
        await run(acts, bad, activity_id="T-a2-v1-d1", heartbeat=1.0)
    ledger = AttemptLedger.of(store, AgentKey.of(bad))
    assert not store.exists(ledger.lease_key)  # released: its retry need not wait it out
    assert [e["kind"] for e in ledger.entries()] == ["error"]
    quick = agent_input({"tool": "shell", "command": "exit 3"}, agent_id="a3")
    counted(acts).reset()
    with pytest.raises(ApplicationError):
        await run(acts, quick, activity_id="T-a3-v1-d1", heartbeat=60.0)  # (due 15 s in)
    lease_key = AttemptLedger.of(store, AgentKey.of(quick)).lease_key
    assert [call for call in counted(acts).log if call[1] == lease_key] == []


async def test_a_lasting_attempt_writes_its_lease_before_a_retry_could_exist_and_the_retry_waits(
    acts: AgentActivities,
):
    """The lease is not written as the attempt starts but a quarter of its heartbeat timeout
    into it — long before the server could give the attempt to another worker (a whole
    heartbeat timeout without heartbeats). A retry started while it runs (as after the first
    worker lost the server, not its work) waits for it, and returns what it kept: the command
    runs once."""
    heartbeat = 8.0  # the lease's first write 2 s in
    workspace = acts.settings.runs / "run-1" / "workspace"
    inp = agent_input(
        {
            "tool": "shell",
            "command": "touch started; sleep 3; echo effect >> effects.txt; echo done",
        }
    )
    lease_key = AttemptLedger.of(counted(acts).inner, AgentKey.of(inp)).lease_key
    began = time.monotonic()
    first = asyncio.create_task(run(acts, inp, heartbeat=heartbeat))
    while not (workspace / "started").exists():
        assert not first.done(), first.result()
        await asyncio.sleep(0.02)
    if time.monotonic() - began < 1.5:  # (a loaded machine may take longer to start it)
        assert not counted(acts).inner.exists(lease_key)  # the command runs; no lease yet
    while not counted(acts).inner.exists(lease_key):
        assert not first.done(), "the attempt ended without its lease"
        await asyncio.sleep(0.02)
    retry = await run(acts, inp, attempt=2, heartbeat=heartbeat)
    assert first.done()  # the retry waited for the first attempt to end
    assert (retry.result, (await first).result) == ("done", "done")
    assert (workspace / "effects.txt").read_text() == "effect\n"


async def test_a_first_attempts_command_record_reaches_the_store_before_its_result(
    acts: AgentActivities,
):
    """A dispatch's first attempt has written nothing of its dispatch when its command runs:
    the watchdog's record still has a folder to go to, and with an object store it is put in
    the store before the result (a worker lost between the two loses nothing)."""
    inp = agent_input({"tool": "shell", "command": f"printf '%0{INLINE_ONLY + 10}d' 7"})
    outcome = await run(acts, inp)
    assert outcome.result_ref is not None  # stored: a write before the kept outcome
    store = counted(acts)
    ledger = AttemptLedger.of(store.inner, AgentKey.of(inp))
    record = json.loads(store.inner.get(ledger.command_key))
    assert record["status"] == 0
    assert store.reads == 0, store.log
    if store.inner.local(ledger.command_key) is None:
        # an object store: the record is put before the result (a local store's record is the
        # watchdog's own file), and the copy on the worker's disk goes once it has reported
        puts = [key for name, key in store.log if name == "put"]
        result_key = outcome.result_ref.uri.removeprefix("artifact:")
        assert puts.index(ledger.command_key) < puts.index(result_key), puts
        assert list((acts.settings.home / "commands").rglob("*.json")) == []


# -- the lease at the heartbeat cadence ------------------------------------------------------------


async def test_a_lease_is_renewed_at_the_heartbeat_cadence_twice_within_its_ttl(tmp_path: Path):
    counting = CountingStore(LocalStore(tmp_path))
    timeout = 2.0  # heartbeats every 0.5 s; the lease's ttl is 1 s
    ages: list[float] = []

    async def hold() -> None:
        lease = Lease(counting, "run/x.lease", 1, ttl=timeout / 2)
        async with lease.held(_beat(), lambda: False, first=True):
            for _ in range(14):
                await asyncio.sleep(0.1)
                holder = Lease(LocalStore(tmp_path), "run/x.lease", 2, ttl=1.0).holder()
                assert holder is not None and holder.alive(timeout / 2)
                ages.append(holder.age)
        await lease.let_go(_beat())

    with _no_heartbeats():
        await environment(heartbeat=timeout).run(hold)
    puts = counting.calls["put"]
    assert 2 <= puts <= 4, counting.log  # taken, then renewed every 0.5 s (not every 0.1)
    assert counting.calls["get"] == 1 and counting.reads == 1  # its release looks once
    assert max(ages) < timeout / 2  # two renewals fit in the ttl: never near lapsing


async def test_a_renewal_that_fails_is_tried_again_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(leases, "POLL", 0.05)
    failing = {"left": 2}

    class Flaky(LocalStore):
        def put(self, key: str, data: bytes, *, sync: bool = False) -> None:
            if failing["left"] and "renewed" in failing:
                failing["left"] -= 1
                raise OSError("the store is busy")
            failing["renewed"] = 1
            super().put(key, data, sync=sync)

    async def hold() -> float:
        lease = Lease(Flaky(tmp_path), "x.lease", 1, ttl=1.0)
        async with lease.held(_beat(), lambda: False, first=True):
            await asyncio.sleep(0.75)  # the renewal at 0.5 s fails twice, then is written
            holder = lease.holder()
            assert holder is not None
            return holder.age

    with _no_heartbeats():
        age = await environment(heartbeat=2.0).run(hold)
    assert failing["left"] == 0 and age < 0.5


async def test_an_attempt_sent_again_waits_for_the_live_lease_of_the_activity_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Its attempts count from 1 again: attempt 1 of the activity sent again still waits for
    attempt 3 of the one before it (still at work on a host cut off from the server)."""
    monkeypatch.setattr(leases, "POLL", 0.05)
    monkeypatch.setattr(leases, "RENEW", 0.05)
    order: list[str] = []
    path = tmp_path / "x.lease"

    async def earlier() -> None:
        lease = Lease.at(path, 3, ttl=5)
        async with lease.held(_beat(), lambda: False):
            order.append("attempt 3 runs")
            await asyncio.sleep(0.4)
            order.append("attempt 3 ends")
        await lease.let_go(_beat())

    async def rerouted() -> None:
        await asyncio.sleep(0.1)
        lease = Lease(Lease.at(path, 1, ttl=5).store, path.name, 1, ttl=5, reroute=1)
        async with lease.held(_beat(), lambda: False):
            order.append("rerouted attempt 1 runs")

    with _no_heartbeats():
        await asyncio.gather(earlier(), rerouted())
    assert order == ["attempt 3 runs", "attempt 3 ends", "rerouted attempt 1 runs"]


async def test_an_attempt_that_waited_for_an_earlier_one_writes_its_lease_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Its first write is not put off: another attempt may have been waiting beside it (it
    too was given up by the server), and must find this one's lease, not none."""
    monkeypatch.setattr(leases, "POLL", 0.05)
    monkeypatch.setattr(leases, "RENEW", 0.05)
    order: list[str] = []
    path = tmp_path / "x.lease"
    second_runs = asyncio.Event()

    async def attempt(n: int, after: float, body: float, wait: float = 0.0) -> None:
        await asyncio.sleep(wait)
        lease = Lease.at(path, n, ttl=5)
        async with lease.held(_beat(), lambda: False, first=n == 1, after=after):
            order.append(f"{n} runs")
            if n == 2:
                second_runs.set()
            await asyncio.sleep(body)
            order.append(f"{n} ends")
        await lease.let_go(_beat())

    async def third() -> None:
        await second_runs.wait()  # it looks once the second runs, its lease put off by 5 s
        await attempt(3, after=5.0, body=0.0)

    with _no_heartbeats():
        await asyncio.gather(
            attempt(1, after=0.0, body=0.3), attempt(2, after=5.0, body=0.3, wait=0.1), third()
        )
    assert order == ["1 runs", "1 ends", "2 runs", "2 ends", "3 runs", "3 ends"]


async def test_a_lease_whose_first_write_meets_a_full_store_waits_for_it_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Put off into the attempt, the first write still waits out a full store as it did
    before the work (a note on the board, pauses that grow): not a request every 0.25 s."""
    import errno

    from activities.agents import storage

    monkeypatch.setattr(storage, "FIRST_PAUSE", 0.1)
    full = {"left": 3, "tries": 0}

    class Full(LocalStore):
        def put(self, key: str, data: bytes, *, sync: bool = False) -> None:
            full["tries"] += 1
            if full["left"]:
                full["left"] -= 1
                raise OSError(errno.ENOSPC, "No space left on device")
            super().put(key, data, sync=sync)

    said: list[str] = []
    lease = Lease(Full(tmp_path), "x.lease", 1, ttl=5.0)
    # (patched by this test's monkeypatch alone: mixed with _no_heartbeats' own, its undo would
    # put _no_heartbeats' silent progress back for every later test of the process)
    monkeypatch.setattr(Beat, "running", lambda self: _quiet())
    monkeypatch.setattr(Beat, "progress", lambda self, note: said.append(note))
    async with lease.held(_beat(), lambda: False, first=True, after=0.05):
        await asyncio.sleep(2.0)  # full three times: 0.1 + 0.2 + 0.4 s of pauses
        assert lease.holder() is not None
    await lease.let_go(_beat())
    assert full["tries"] == 4, full
    assert any("no space left" in note for note in said), said


async def test_a_first_write_under_way_when_the_attempt_ends_is_released_after_it_lands(
    tmp_path: Path,
):
    """A slow store: the release waits for the write, so no lease is left behind for the
    retry to wait out."""

    class Slow(LocalStore):
        def put(self, key: str, data: bytes, *, sync: bool = False) -> None:
            time.sleep(0.3)
            super().put(key, data, sync=sync)

    lease = Lease(Slow(tmp_path), "x.lease", 1, ttl=5.0)
    with _no_heartbeats():
        async with lease.held(_beat(), lambda: False, first=True, after=0.05):
            await asyncio.sleep(0.15)  # the write began at 0.05 s and lands at 0.35 s
        await lease.let_go(_beat())
        await asyncio.sleep(0.3)
    assert not (tmp_path / "x.lease").exists()


def test_the_first_write_comes_a_quarter_of_the_sooner_timeout_into_an_attempt():
    from datetime import timedelta

    from activities.agents.lease import first_write_after

    assert first_write_after() == 0.0  # not in an activity: at once
    for heartbeat, start_to_close, expected in [(10.0, 120.0, 2.5), (10.0, 4.0, 1.0)]:
        env = environment(heartbeat=heartbeat)
        env.info = env.info.__class__(
            **{**env.info.__dict__, "start_to_close_timeout": timedelta(seconds=start_to_close)}
        )
        assert env.run(first_write_after) == expected
    env = environment()
    env.info = env.info.__class__(**{**env.info.__dict__, "heartbeat_timeout": None})
    assert env.run(first_write_after) == 30.0  # no heartbeat timeout: its start-to-close's


def test_a_rerouted_attempt_reads_how_the_last_attempt_before_it_ended(tmp_path: Path):
    """An activity sent again to another host counts its attempts from 1: the attempt before
    its first is the ledger's last, not "none" (its error backoff and a command's record
    follow), and its lines come after those of every attempt before it, whatever their
    numbers: its end is written, and a call it began is known to a later attempt."""

    def ledgers(name: str) -> tuple[AttemptLedger, AttemptLedger]:
        first = AttemptLedger.at(tmp_path / name)
        return first, AttemptLedger(first.store, first.key, reroute=1)

    before, again = ledgers("x.jsonl")
    assert again.begin(1, 10.0).previous is None  # nothing ran before it
    before, again = ledgers("y.jsonl")
    before.begin(2, 10.0)
    before.record(2, "error", "exit 3")
    start = again.begin(1, 10.0)
    assert start.after_error and start.previous == "error: exit 3" and start.errors == 1
    before, again = ledgers("z.jsonl")
    before.begin(2, 10.0)  # started, and no end: its worker was lost
    start = again.begin(1, 10.0)
    assert not start.after_error and (start.previous or "").startswith("worker lost")
    # its own end is not taken for a stale attempt's (attempt 1 < attempt 2 of the first)
    assert again.record(1, "error", "exit 4") == 1
    start = again.begin(2, 10.0)
    assert start.after_error and start.previous == "error: exit 4" and start.errors == 1
    # a call it began and never reported is in doubt for the next, though an attempt 1 of the
    # first activity ended in an error
    before, again = ledgers("w.jsonl")
    before.record(1, "error", "exit 5")
    again.begin(1, 10.0)
    again.calling(1, "shell: git push")
    assert again.begin(2, 10.0).calling == "shell: git push"


# -- a worker lost just after its command ended ----------------------------------------------

EFFECT = 'echo effect >> effects.txt; echo "done by $XSKY_ATTEMPT_KEY"; touch finished'


@pytest.mark.parametrize(
    ("store", "delay_ms"), [("local", 1), ("local", 5), ("local", 20), ("s3", 1), ("s3", 20)]
)
async def test_a_worker_killed_just_after_its_command_ended_leaves_one_side_effect(
    tmp_path: Path,
    store: str,
    delay_ms: int,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
):
    """The first attempt runs in a worker process of its own (a real command, a real store),
    killed 1–20 ms after its command's last act; the retry, a new worker on the same machine
    (a workspace agent's retry goes to its workspace's host), returns the command's recorded
    end, or the outcome the first kept, and never runs it again. With an object store the
    record is on the machine's disk only (the worker died before it could put it in the store)."""
    env = settings_env(tmp_path, store_env(request, monkeypatch) if store == "s3" else {})
    inp = agent_input({"tool": "shell", "command": EFFECT}, agent_id="k")
    raw = tmp_path / "input.json"
    raw.write_text(inp.model_dump_json())
    workspace = tmp_path / "home" / "runs" / "run-1" / "workspace"
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.unit.attempt_runner", json.dumps(env), str(raw), "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    killer = kill_after(workspace / "finished", worker, delay_ms / 1000)
    try:
        await asyncio.to_thread(killer.join, 60)
        assert worker.wait(timeout=30) == -signal.SIGKILL, "the worker was not killed"
    finally:
        if worker.poll() is None:
            worker.kill()
    # The server retries a lost attempt once its heartbeat timeout has passed; by then the
    # command's watchdog (which outlives its worker) has written the command's end.
    await asyncio.sleep(watchdog.DRAIN_SECONDS + 0.5)
    acts = AgentActivities(load_settings(env))
    try:
        retry = await run(acts, inp, attempt=2, activity_id="T-k-v1-d1")
    finally:
        await acts.close()
    assert (workspace / "effects.txt").read_text() == "effect\n", "the command ran twice"
    assert retry.result is not None and retry.result.startswith("done by xsky:run-1:")
    assert retry.attempt == 2


# -- helpers ---------------------------------------------------------------------------------------


def _beat() -> Beat:
    return Beat(task_id="T-1", dispatch=1, progress_interval=5.0)


class _no_heartbeats:
    """Beat's reports need a leader; the lease's tests have none."""

    def __enter__(self) -> None:
        self._patch = pytest.MonkeyPatch()
        self._patch.setattr(Beat, "running", lambda self: _quiet())
        self._patch.setattr(Beat, "progress", lambda self, note: None)

    def __exit__(self, *_: object) -> None:
        self._patch.undo()


class _quiet:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *_: object) -> None:
        return None
