"""activities/server_clock.py: the server's clock as an attempt knows it (its ``started_time``
plus this worker's monotonic clock since it first met the attempt) — one attempt's anchor is
never another's, and a running attempt's is not dropped while others come and go (review20)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from unittest import mock

from activities import hosts, server_clock
from activities.agents import spend


def _info(run: str, started: datetime, activity_id: str = "3") -> SimpleNamespace:
    return SimpleNamespace(
        workflow_id="xsky-long-run",
        workflow_run_id=run,
        activity_id=activity_id,
        attempt=1,
        started_time=started,
    )


def test_an_execution_after_continue_as_new_does_not_meet_the_previous_ones_anchor():
    """The leader's host activities take the SDK's activity ids, a sequence that starts again in
    each execution: execution 2's "3" met execution 1's anchor, three hours old, and its clock
    ran three hours ahead — every host's last beat judged three hours old (lost)."""
    mono = [1000.0]
    t0 = datetime.now(UTC)
    with mock.patch.object(server_clock.time, "monotonic", lambda: mono[0]):
        with mock.patch.object(server_clock.activity, "info", return_value=_info("run-1", t0)):
            hosts.server_now()
            spend.server_now()
        mono[0] += 3 * 3600
        t1 = t0 + timedelta(hours=3)
        with mock.patch.object(server_clock.activity, "info", return_value=_info("run-2", t1)):
            assert abs(hosts.server_now() - t1.timestamp()) < 1
            assert abs((spend.server_now() - t1).total_seconds()) < 1


def test_a_running_attempt_keeps_its_anchor_while_many_others_are_met():
    """A busy worker met over a thousand attempts while one ran: the table was cleared, and
    the running attempt, met again, counted from its start anew — its clock behind by all it
    had run (a 30-minute budget's minutes given again)."""
    mono = [0.0]
    t0 = datetime.now(UTC)
    mine = _info("run-long", t0, "T-1-v1-d1")
    with mock.patch.object(server_clock.time, "monotonic", lambda: mono[0]):
        with mock.patch.object(server_clock.activity, "info", return_value=mine):
            hosts.server_now()
        for n in range(3 * server_clock.KEPT):
            mono[0] += 1.0
            other = _info("run-long", t0 + timedelta(seconds=mono[0]), f"T-{n + 2}-v1-d1")
            with mock.patch.object(server_clock.activity, "info", return_value=other):
                hosts.server_now()
            if n % 100 == 0:  # the running attempt asks before each model call
                with mock.patch.object(server_clock.activity, "info", return_value=mine):
                    hosts.server_now()
        with mock.patch.object(server_clock.activity, "info", return_value=mine):
            assert abs(hosts.server_now() - (t0.timestamp() + mono[0])) < 1
