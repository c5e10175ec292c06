"""The flat-retry rule: Temporal retries every attempt after FLAT_RETRY; the attempt after an
error waits the rest of the error backoff itself, and one after a lost worker does not."""

from __future__ import annotations

from pathlib import Path

from activities.agents.ledger import AttemptLedger
from xsky.plan.agent_config import FLAT_RETRY, RetryOptions


def test_error_retries_still_back_off_the_users_way_less_the_flat_interval():
    retry = RetryOptions(initial_interval=2, backoff_coefficient=3, maximum_interval=10)
    assert [retry.backoff(n) for n in range(5)] == [0, 2, 6, 10, 10]
    assert [retry.wait_after(n) for n in range(4)] == [0, 2 - FLAT_RETRY, 6 - FLAT_RETRY, 9]
    assert RetryOptions(initial_interval=0.2).flat_interval() == 0.2  # never slower than asked
    assert RetryOptions(initial_interval=0.2).wait_after(1) == 0


def test_an_attempt_after_an_error_waits_and_one_after_a_lost_worker_does_not(tmp_path: Path):
    ledger = AttemptLedger.at(tmp_path / "a.jsonl")
    first = ledger.begin(1, 10)
    assert (first.previous, first.after_error, first.errors) == (None, False, 0)
    ledger.record(1, "error", "exit 1")
    second = ledger.begin(2, 10)
    assert second.after_error and second.errors == 1 and second.previous == "error: exit 1"
    # attempt 2 started and never ended: its worker was lost
    third = ledger.begin(3, 10)
    assert not third.after_error and third.errors == 1
    assert third.previous is not None and third.previous.startswith("worker lost")


def test_a_superseded_attempt_writes_no_end(tmp_path: Path):
    ledger = AttemptLedger.at(tmp_path / "a.jsonl")
    ledger.begin(1, 10)
    ledger.begin(2, 10)  # the server gave up on 1 (its worker stopped) and started 2
    assert ledger.superseded(1) and not ledger.superseded(2)
    assert ledger.record(1, "error", "stale") == 0  # attempt 1, resumed, counts for nothing
    assert ledger.record(2, "error", "real") == 1
