"""The disk guard looks ahead at the rate a filesystem fills: a writer faster than the guard's
looks is stopped while the reserve still holds (a late look looks further ahead) — and named
for the quota it passed when it passed one."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.sandbox import disk

MiB = 1024 * 1024


def test_the_margin_is_what_the_disk_would_take_by_the_look_after_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter([10.0, 10.02, 10.32, 12.0, 12.02])
    monkeypatch.setattr(disk.time, "monotonic", lambda: next(clock))
    guard = disk.DiskGuard()
    assert guard._coming(1, 100 * MiB) == 0  # a first look: no rate yet
    # 20 MiB in 20 ms (1 GiB/s): 0.1 s ahead
    assert guard._coming(1, 120 * MiB) == pytest.approx(100 * MiB, rel=0.01)
    # a look 300 ms late: twice that far ahead
    assert guard._coming(1, 420 * MiB) == pytest.approx(600 * MiB, rel=0.01)
    # after a second and more without a look, no rate; a shrinking disk, none either
    assert guard._coming(1, 900 * MiB) == 0
    assert guard._coming(1, 800 * MiB) == 0


def test_a_writer_stopped_for_a_filling_disk_is_named_for_its_quota_when_it_passed_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "fill.0").write_bytes(b"x" * (3 * MiB))
    stopped: list[str] = []
    watch = disk.Watch(
        workspace=tmp_path, quota=1 * MiB, reserve=16 * MiB, kill=lambda: None, baseline=0
    )
    watch.kill = lambda: stopped.append(watch.reason or "")
    disk.DiskGuard()._emergency([watch], used=500 * MiB, free=300 * MiB)
    assert stopped and "disk quota" in stopped[0] and "nearly full" not in stopped[0]
    (tmp_path / "fill.1").write_bytes(b"x" * (3 * MiB))  # 6 MiB grown: a writer
    within = disk.Watch(
        workspace=tmp_path, quota=64 * MiB, reserve=16 * MiB, kill=lambda: None, baseline=0
    )
    disk.DiskGuard()._emergency([within], used=500 * MiB, free=10 * MiB)
    assert within.reason is not None and "nearly full" in within.reason
