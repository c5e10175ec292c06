"""Temporal core's retry lines while the server does not answer: the first said with what it
means, then one a minute with how many were held back (chaos14: 1,028 lines in three minutes
of a worker whose server was killed and moved, none saying what it meant)."""

from __future__ import annotations

import logging
from datetime import datetime

from activities.core_logs import HeldRetries

RETRY = (
    "[sdk_core::temporalio_client::retry] gRPC call poll_activity_task_queue retried 7 times "
    "{'error': 'Status { code: Unavailable, message: \"tcp connect error\" }'}"
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(text: str, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("temporalio.core", level, "(sdk-core)", 0, text, (), None)


def _shown(held: HeldRetries, clock: Clock, at: float, text: str = RETRY) -> str | None:
    clock.now = at
    record = _record(text)
    return record.getMessage() if held.filter(record) else None


def test_the_first_retry_says_what_it_means_and_the_rest_come_one_a_minute():
    clock = Clock()
    held = HeldRetries(
        "temporal.example:7233", clock=clock, wall=lambda: datetime(2026, 12, 7, 9, 5, 1)
    )
    first = _shown(held, clock, 0.0)
    assert first is not None
    assert first.startswith("Temporal at temporal.example:7233 does not answer (since 09:05:01;")
    assert "restart this worker with its new TEMPORAL_ADDRESS" in first
    assert "retried 7 times" in first and "tcp connect error" in first  # what core said, kept
    # a retry line every 0.2 s: none shown for a minute, then one counting them
    shown = [s for i in range(1, 301) if (s := _shown(held, clock, i * 0.2)) is not None]
    assert len(shown) == 1
    assert "299 more such lines held back" in shown[0]


def test_other_core_lines_pass_as_they_are():
    clock = Clock()
    held = HeldRetries("localhost:7233", clock=clock)
    _shown(held, clock, 0.0)
    text = "[sdk_core::worker] Activity task failed to complete"
    assert _shown(held, clock, 1.0, text) == text
    beat = "[sdk_core::temporalio_sdk_core::worker::heartbeat] Network error while sending worker heartbeat"
    assert _shown(held, clock, 2.0, beat) is None  # (a retry of its own, held back)


def test_a_new_outage_after_a_quiet_spell_is_said_at_once():
    clock = Clock()
    held = HeldRetries("localhost:7233", clock=clock)
    assert _shown(held, clock, 0.0) is not None
    assert _shown(held, clock, 10.0) is None
    # the server answered for a while (no retry lines), then went away again
    again = _shown(held, clock, 100.0)
    assert again is not None and "held back" not in again
