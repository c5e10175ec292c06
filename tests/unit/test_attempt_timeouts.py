"""Which timeout an attempt that timed out ran past: Temporal says only "timed out"."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from temporalio.activity import ActivityCancellationDetails

from activities.agents.activity import _stopped, _timed_out


def info(start_to_close: float, heartbeat: float | None = 30) -> Any:
    return SimpleNamespace(
        start_to_close_timeout=timedelta(seconds=start_to_close),
        heartbeat_timeout=timedelta(seconds=heartbeat) if heartbeat else None,
    )


def test_an_attempt_cut_off_well_before_its_limit_missed_its_heartbeats_not_its_time():
    """A dev server frozen for 15 s: an attempt of 17 s with 600 s allowed was said to have
    "ran past its start-to-close timeout"."""
    said = _timed_out(info(600), 17.2)
    assert "heartbeats did not reach the server within 30s" in said
    assert "after 17s of 600s allowed" in said and "start-to-close" not in said


def test_an_attempt_at_its_limit_ran_past_its_start_to_close_timeout():
    assert _timed_out(info(600), 600.4) == "ran past its start-to-close timeout"
    assert _timed_out(info(60), 55) == "ran past its start-to-close timeout"  # (clocks differ)


def test_the_log_line_of_a_stopped_attempt_says_the_same():
    details = SimpleNamespace(timed_out=True, worker_shutdown=False, paused=False, not_found=False)
    assert "heartbeats did not reach" in _stopped(details, info(600), 17)  # type: ignore[arg-type]
    assert _stopped(None, info(600), 17).startswith("stopped by its leader")


def test_an_attempt_the_server_no_longer_knows_is_not_said_stopped_by_its_leader():
    """After a dev server restart the agent's log said "stopped by its leader: … paused,
    cancelled or replanned" — nobody had done any of it."""
    lost = ActivityCancellationDetails(not_found=True)
    assert _stopped(lost, info(600), 3).startswith("the server no longer has this attempt")
    reset = ActivityCancellationDetails(reset=True)
    assert "temporal activity reset" in _stopped(reset, info(600), 3)
    asked = ActivityCancellationDetails(cancel_requested=True)
    assert _stopped(asked, info(600), 3).startswith("stopped by its leader")
