"""The disk guard looks ahead at the rate a filesystem fills: a writer faster than the guard's
looks is stopped while the reserve still holds (a late look looks further ahead)."""

from __future__ import annotations

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
