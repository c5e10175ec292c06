"""A cgroup's kill looks again soon for processes the kernel still lists right after its
command ended (0.5 ms, then doubling up to 5 ms), not 5 ms each time — and waits as long in
all as before for processes that do not go (issue 37, item 5: the shell tool's overhead; the
sleeps are on the worker's event loop)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from activities.sandbox import limits
from activities.sandbox.limits import AttemptCgroup, Hierarchy


class _Cgroup(AttemptCgroup):
    """A v1 cgroup whose processes leave after ``rounds`` looks (or never: None)."""

    def __init__(self, tmp_path: Path, rounds: int | None) -> None:
        super().__init__(Hierarchy(1, {"pids": tmp_path}), limits.Limits())
        self.rounds, self.looks, self.frozen = rounds, 0, [False]

    def pids(self) -> list[int]:
        self.looks += 1
        return [] if self.rounds is not None and self.looks > self.rounds else [999_999_999]

    def freeze(self, frozen: bool) -> None:
        self.frozen.append(frozen)


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    pauses: list[float] = []
    monkeypatch.setattr(limits.time, "sleep", pauses.append)
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(limits.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    return pauses


def test_an_exiting_command_is_looked_at_again_within_a_millisecond(
    tmp_path: Path, slept: list[float]
) -> None:
    group = _Cgroup(tmp_path, rounds=1)
    group.kill()
    assert slept == [0.0005] and group.looks == 2
    assert group.frozen[1] is True and group.frozen[-1] is False  # frozen first, thawed last


def test_pauses_double_up_to_five_ms(tmp_path: Path, slept: list[float]) -> None:
    _Cgroup(tmp_path, rounds=6).kill()
    assert slept == [0.0005, 0.001, 0.002, 0.004, 0.005, 0.005]


def test_processes_that_stay_are_killed_for_as_long_as_before(
    tmp_path: Path, slept: list[float]
) -> None:
    group = _Cgroup(tmp_path, rounds=None)
    group.kill()
    assert limits.KILL_WAIT <= sum(slept) < limits.KILL_WAIT + limits.KILL_PAUSE
    assert max(slept) == limits.KILL_PAUSE
    assert group.frozen[-1] is False


def test_each_look_that_finds_processes_sends_them_sigkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(limits.time, "sleep", lambda s: None)
    monkeypatch.setattr(limits.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    _Cgroup(tmp_path, rounds=3).kill()
    assert sent == [(999_999_999, signal.SIGKILL)] * 3
