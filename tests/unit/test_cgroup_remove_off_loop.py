"""A sandboxed command's cgroup is removed without sleeping on the worker's event loop:
right after its command ends the kernel may still count the exited processes (rmdir says
EBUSY), and the retries — 10 ms sleeps — ran on the loop that sends every agent's heartbeats."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from activities.sandbox import limits
from activities.sandbox.limits import AttemptCgroup, Hierarchy
from activities.tools import shell


def _cgroup(tmp_path: Path) -> AttemptCgroup:
    # A folder with something in it stands in for a cgroup the kernel still counts busy.
    group = AttemptCgroup(Hierarchy(2, {"": tmp_path}), limits.Limits())
    group.folders[""].mkdir()
    return group


def test_one_try_without_a_sleep_says_whether_it_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits.time, "sleep", lambda s: pytest.fail("slept"))
    busy = _cgroup(tmp_path)
    (busy.folders[""] / "busy").mkdir()
    said: list[str] = []
    busy.when_removed(lambda: said.append("released"))
    assert busy.remove(wait=False) is False and busy.folders[""].exists()
    assert said == ["released"]  # (the registry lets it go at the first try, as before)
    (busy.folders[""] / "busy").rmdir()
    assert busy.remove(wait=False) is True and not busy.folders[""].exists()
    assert said == ["released"]


def test_a_busy_cgroup_is_waited_for_on_a_thread_not_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = _cgroup(tmp_path)
    (group.folders[""] / "busy").mkdir()
    loop_thread = threading.get_ident()
    slept_on: list[int] = []

    def sleep(seconds: float) -> None:  # the kernel lets it go after the first wait
        slept_on.append(threading.get_ident())
        (group.folders[""] / "busy").rmdir()

    monkeypatch.setattr(limits.time, "sleep", sleep)
    asyncio.run(shell._released(None, group))
    assert not group.folders[""].exists()
    assert slept_on and loop_thread not in slept_on
