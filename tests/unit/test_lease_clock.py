"""A lease held on this machine is timed by its monotonic clock, not the wall clock: a step of
the wall clock (NTP correcting a drifted clock, a person setting the date) by more than the
lease's ttl made a live holder's lease look lapsed — or, stepped back, a dead one's live for as
long — and an attempt waiting for it ran beside the attempt still at work (chaos11)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from activities.agents import lease as leases
from activities.agents.lease import Lease


def test_a_wall_clock_step_forward_does_not_lapse_a_live_lease_held_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    held = Lease.at(tmp_path / "x.lease", 1, ttl=5)
    held._take()  # renewed a moment ago by a live attempt (this process)
    real = time.time
    monkeypatch.setattr(leases.time, "time", lambda: real() + 30)  # the wall clock steps 30 s
    holder = Lease.at(tmp_path / "x.lease", 2, ttl=5).holder()
    assert holder is not None and holder.alive(5), holder


def test_a_wall_clock_step_back_does_not_keep_a_lapsed_lease_held_here_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    real_mono = time.monotonic
    monkeypatch.setattr(leases.time, "monotonic", lambda: real_mono() - 30)
    held = Lease.at(tmp_path / "x.lease", 1, ttl=5)
    held._take()  # renewed 30 s ago (by the monotonic clock), never since
    monkeypatch.setattr(leases.time, "monotonic", real_mono)
    real = time.time
    monkeypatch.setattr(
        leases.time, "time", lambda: real() - 30
    )  # ... and the wall clock stepped back
    holder = Lease.at(tmp_path / "x.lease", 2, ttl=5).holder()
    assert holder is not None and not holder.alive(5), holder
