"""A lease's age is judged on the server's clock as each attempt knows it, not on the hosts'
wall clocks (chaos15): a holder whose clock is 30 s behind renews a lease that a reader on
another host must see alive, and a dead holder an hour ahead must not be seen alive for an
hour."""

from __future__ import annotations

import time

import pytest

from activities.agents import lease as leases
from activities.agents.lease import Lease


def _hold_elsewhere(path, monkeypatch, skew: float, server: float) -> None:
    """Write the lease as an attempt on host-a would, its wall clock ``skew`` s off, whose
    attempt started at server time ``server`` (now)."""
    real = time.time
    with monkeypatch.context() as m:
        m.setattr(leases.socket, "gethostname", lambda: "host-a")
        m.setattr(leases.time, "time", lambda: real() + skew)
        held = Lease.at(path, attempt=1, ttl=5.0)
        held.anchor = (server, time.monotonic())
        held._write()


@pytest.mark.parametrize("skew", [-30.0, 3600.0])
def test_the_age_of_another_hosts_lease_does_not_depend_on_its_wall_clock(
    tmp_path, monkeypatch, skew
):
    server = time.time()  # the server's clock (this host's is right)
    _hold_elsewhere(tmp_path / "T-1.lease", monkeypatch, skew, server)
    reader = Lease.at(tmp_path / "T-1.lease", attempt=2, ttl=5.0)
    reader.anchor = (server, time.monotonic())
    holder = reader.holder()
    assert holder is not None and holder.host == "host-a"
    assert abs(holder.age) < 1.0  # renewed just now, whatever host-a's clock says
    assert holder.alive(5.0)
    # six seconds later without a renewal it has lapsed, also for the host an hour ahead
    reader.anchor = (server + 6.0, time.monotonic())
    assert not reader.holder().alive(5.0)


def test_a_reader_outside_an_activity_still_ages_by_the_wall_clock(tmp_path, monkeypatch):
    _hold_elsewhere(tmp_path / "T-1.lease", monkeypatch, 0.0, time.time())
    holder = Lease.at(tmp_path / "T-1.lease", attempt=2, ttl=5.0).holder()
    assert holder is not None and holder.alive(5.0)
