"""A command's record in the spare place outlives an attempt whose store could not take its
outcome: the worker stays alive, the attempt fails on the store, and the retry returns the
record instead of running the command again (a code review's reproduction)."""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any

import pytest

from activities.agents import storage as agent_storage
from activities.agents.activity import AgentActivities
from activities.agents.key import AgentKey
from activities.agents.ledger import AttemptLedger
from tests.counting_store import CountingStore
from tests.unit.attempt_runner import run
from tests.unit.test_store_ops import agent_input, settings_env
from xsky.config import load_settings


class Breakable(CountingStore):
    """A store whose disk turns read-only (every write refused) when told."""

    broken = False

    def _check(self) -> None:
        if self.broken:
            raise OSError(errno.EROFS, "Read-only file system")

    def put(self, key: str, data: Any, *, sync: bool = False) -> Any:
        self._check()
        return super().put(key, data, sync=sync)

    def append(self, key: str, data: bytes, *, sync: bool = False) -> Any:
        self._check()
        return self.inner.append(key, data, sync=sync)

    def delete(self, key: str) -> Any:
        self._check()
        return self.inner.delete(key)


async def test_the_spare_record_survives_a_worker_that_could_not_keep_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_storage, "deadline", lambda: time.monotonic() + 1.5)
    acts = AgentActivities(load_settings(settings_env(tmp_path)))
    store = Breakable(acts.store.objects)
    acts.store.objects = store
    workspace = tmp_path / "home" / "runs" / "run-1" / "workspace"
    inp = agent_input(
        {"tool": "shell", "command": "echo effect >> effects.txt; echo ok"}, agent_id="k"
    )
    ledger = AttemptLedger.of(store.inner, AgentKey.of(inp))
    here = store.inner.local(ledger.command_key)
    assert here is not None
    here.mkdir(parents=True)  # the store's place cannot take the record (a folder is there)
    keep = AttemptLedger.complete

    def store_goes_read_only(self: AttemptLedger, *a: Any, **kw: Any) -> Any:
        store.broken = True  # once the command has run
        return keep(self, *a, **kw)

    monkeypatch.setattr(AttemptLedger, "complete", store_goes_read_only)
    with pytest.raises(Exception):  # noqa: B017 - the attempt fails on the store, whatever its type
        await run(acts, inp, heartbeat=60.0)
    assert ledger.command_spare(acts.settings.home).is_file()  # the command's end, kept
    store.broken = False
    monkeypatch.setattr(AttemptLedger, "complete", keep)
    here.rmdir()
    out = await run(acts, inp, attempt=2, activity_id="T-k-v1-d1", heartbeat=60.0)
    await acts.close()
    assert out.result == "ok"
    assert (workspace / "effects.txt").read_text().splitlines() == ["effect"]  # ran once
    assert not ledger.command_spare(acts.settings.home).exists()  # reported: it goes


async def test_a_forks_workspace_copy_heartbeats_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy longer than the heartbeat timeout lost the attempt, and its retry started a
    second copy beside the first (a code review's reproduction)."""
    from activities.sandbox import workspace_seed
    from tests.unit.attempt_runner import environment

    copy_seconds = 2.0
    acts = AgentActivities(load_settings(settings_env(tmp_path)))
    source = tmp_path / "home" / "runs" / "base" / "workspace"
    source.mkdir(parents=True)
    (source / "big.bin").write_text("x")
    real = workspace_seed.subprocess.run

    def slow_copy(*a: Any, **kw: Any) -> Any:  # a large workspace without reflinks
        time.sleep(copy_seconds)
        return real(*a, **kw)

    monkeypatch.setattr(workspace_seed.subprocess, "run", slow_copy)
    beats: list[float] = []
    env = environment(heartbeat=10.0)
    env.on_heartbeat = lambda *d: beats.append(time.monotonic())
    inp = agent_input(
        {"tool": "shell", "command": "cat big.bin"}, workspace_of="fork-1", workspace_from="base"
    )
    t0 = time.monotonic()
    out = await env.run(acts.run_agent, inp)
    await acts.close()
    assert out.result == "x"
    ends = [t0, *beats, time.monotonic()]
    # (beats about every second: none missing while the copy ran, 2 s)
    assert max(b - a for a, b in zip(ends, ends[1:], strict=False)) < copy_seconds * 0.75


async def test_a_call_an_earlier_worker_marked_begun_is_asked_about_whatever_this_workers_rules(
    tmp_path: Path,
) -> None:
    """Two workers whose effects rules differ (a rolling settings change): the first marked a
    payment begun and died; the retry, on a worker whose rules call it harmless, ran it again
    without a word (a chaos run). Now it asks."""
    acts = AgentActivities(load_settings(settings_env(tmp_path)))
    inp = agent_input({"tool": "shell", "command": "echo pay >> paid.txt"}, agent_id="p")
    ledger = AttemptLedger.of(acts.store.objects, AgentKey.of(inp))
    ledger.calling(1, "`echo pay >> paid.txt`")  # the first worker's mark; then it was lost
    out = await run(acts, inp, attempt=2, activity_id="T-p-v1-d1", heartbeat=60.0)
    await acts.close()
    assert out.kind == "question" and out.request is not None, out
    assert "again" in (out.request.choices or [])
    assert not (tmp_path / "home" / "runs" / "run-1" / "workspace" / "paid.txt").exists()
