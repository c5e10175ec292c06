"""An attempt's last log lines travel in its kept outcome on an object store (one write at its
end instead of two), and a reader of the agent's log finds them in their place."""

from __future__ import annotations

import json
import time
from pathlib import Path

from activities.agents.key import AgentKey
from activities.agents.ledger import AttemptLedger
from activities.agents.transcripts import LogTail, append_event, log_line, read_log
from activities.storage.local import LocalStore
from xsky.agent_log import parse_lines, transcript_key, with_tails
from xsky.runs import AgentOutcome


class ObjectLike(LocalStore):
    """A store whose objects are not files here, as an S3 store's (its appends are requests)."""

    def local(self, key: str) -> Path | None:
        return None


def line(kind: str, at: str, **fields: object) -> bytes:
    return (json.dumps({"type": kind, "at": at, **fields}) + "\n").encode()


def kinds(data: bytes) -> list[str]:
    return [e["type"] for e in parse_lines(data.decode())]


def test_each_attempts_carried_lines_land_after_what_was_written_before_them() -> None:
    log = b"".join(
        [
            line("attempt", "2026-12-06T10:00:00.000+00:00", attempt=1),
            line("tool_call", "2026-12-06T10:00:01.000+00:00"),
            # the second dispatch's first lines, appended after the first attempt ended
            line("attempt", "2026-12-06T10:00:05.000+00:00", attempt=2),
            line("leader", "2026-12-06T10:00:09.000+00:00"),
        ]
    )
    first = line("tool_result", "2026-12-06T10:00:02.000+00:00") + line(
        "outcome", "2026-12-06T10:00:02.500+00:00"
    )
    second = line("outcome", "2026-12-06T10:00:06.000+00:00").rstrip(b"\n")  # no newline
    merged = with_tails(log, [second, first, b""])  # listed in any order
    assert kinds(merged) == [
        "attempt",
        "tool_call",
        "tool_result",
        "outcome",
        "attempt",
        "outcome",
        "leader",
    ]
    assert merged.endswith(b"\n") and with_tails(log, []) is log


def test_a_short_attempt_on_an_object_store_writes_once_and_its_log_reads_whole(
    tmp_path: Path,
) -> None:
    store = ObjectLike(tmp_path / "store")
    key = AgentKey(run_id="run-1", agent_id="a1", task_id="T-a1", checkpoint="cp.json")
    ledger = AttemptLedger.of(store, key)
    log_key = transcript_key("run-1", "a1")
    tail = LogTail(store, log_key)
    for kind in ("attempt", "tool_call", "outcome"):
        data = log_line(log_key, kind)
        assert data is not None
        tail.add(data)  # outside an event loop a line is written at once: none held
    assert kinds(store.appended(log_key)) == ["attempt", "tool_call", "outcome"]
    held_tail = LogTail(store, log_key)
    held_tail._lines = [
        log_line(log_key, "tool_result") or b"",
        log_line(log_key, "outcome") or b"",
    ]
    held = held_tail.for_outcome()
    assert held and held_tail._lines == []
    ledger.complete(1, AgentOutcome(result="hi"), held)
    held_tail.flush()  # nothing left to append
    time.sleep(0.002)  # (the leader's word comes later, in a line's millisecond resolution)
    append_event(store, log_key, "leader", point="result", verdict="accept")
    assert kinds(read_log(store, log_key)) == [
        "attempt",
        "tool_call",
        "outcome",
        "tool_result",
        "outcome",
        "leader",
    ]
    assert kinds(store.appended(log_key)) == ["attempt", "tool_call", "outcome", "leader"]
    kept = ledger.outcome()  # the carried lines do not disturb the outcome itself
    assert kept is not None and kept.result == "hi" and ledger.has_outcome()
    assert ledger.outcome_key.startswith("run-1/a1/")


def test_on_a_local_disk_the_lines_are_appended_as_ever(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    log_key = transcript_key("run-1", "a1")
    tail = LogTail(store, log_key)
    tail._lines = [log_line(log_key, "outcome") or b""]
    assert tail.for_outcome() == b""  # kept to be appended: the file stays whole
    tail.flush()
    assert kinds((tmp_path / "store" / log_key).read_bytes()) == ["outcome"]


def test_lines_put_back_when_the_outcome_could_not_be_kept_are_appended_first(
    tmp_path: Path,
) -> None:
    store = ObjectLike(tmp_path / "store")
    log_key = transcript_key("run-1", "a1")
    tail = LogTail(store, log_key)
    tail._lines = [log_line(log_key, "tool_result") or b""]
    held = tail.for_outcome()
    tail._lines = [log_line(log_key, "failed") or b""]  # what came since
    tail.put_back(held)
    tail.flush()
    assert kinds(store.appended(log_key)) == ["tool_result", "failed"]


def test_an_outcome_kept_beside_the_ledger_by_an_older_worker_is_still_found(
    tmp_path: Path,
) -> None:
    """A run in flight across an upgrade: its report lost, the next attempt returns it."""
    store = LocalStore(tmp_path / "store")
    key = AgentKey(run_id="run-1", agent_id="a1", task_id="T-a1", checkpoint="cp.json")
    ledger = AttemptLedger.of(store, key)
    assert not ledger.has_outcome() and ledger.outcome() is None
    legacy = ledger.key.removesuffix(".jsonl") + ".outcome.json"
    store.put(legacy, AgentOutcome(result="kept before").model_dump_json(by_alias=True).encode())
    assert ledger.has_outcome()
    kept = ledger.outcome()
    assert kept is not None and kept.result == "kept before"
