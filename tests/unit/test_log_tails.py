"""An attempt's last log lines travel in its kept outcome on an object store (one write at its
end instead of two), and a reader of the agent's log finds them in their place."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from activities.agents import transcripts
from activities.agents.key import AgentKey
from activities.agents.ledger import AttemptLedger
from activities.agents.transcripts import LogTail, append_event, has_log, log_line, read_log
from activities.storage.local import LocalStore
from xsky.agent_log import parse_lines, transcript_key, with_tails
from xsky.runs import AgentOutcome

T = "2026-12-06T10:00:{:06.3f}+00:00"  # a line's time, by its second


class ObjectLike(LocalStore):
    """A store whose objects are not files here, as an S3 store's (its appends are requests)."""

    def local(self, key: str) -> Path | None:
        return None


def line(kind: str, second: float) -> bytes:
    return (json.dumps({"type": kind, "at": T.format(second)}) + "\n").encode()


def kinds(data: bytes) -> list[str]:
    return [e["type"] for e in parse_lines(data.decode())]


def test_carried_lines_land_where_an_append_of_their_own_would_have() -> None:
    """By when they were written, not when their lines were: a log read again only grows at
    its end (a follower reads it by its length), even when a line of another writer (the
    leader's word on a stall) came between an attempt's lines and its end."""
    log = line("attempt", 0) + line("tool_call", 1) + line("leader", 3) + line("attempt", 9)
    first = line("tool_result", 2) + line("outcome", 2.5)
    second = line("outcome", 10).rstrip(b"\n")  # no newline at its end
    merged = with_tails(log, [(T.format(11), second), (T.format(4), first), ("", b"")])
    assert kinds(merged) == [
        "attempt",
        "tool_call",
        "leader",
        "tool_result",
        "outcome",
        "attempt",
        "outcome",
    ]
    assert merged.endswith(b"\n") and with_tails(log, []) is log
    # what was read before the first attempt's outcome was written is where it was
    before = line("attempt", 0) + line("tool_call", 1) + line("leader", 3)
    assert merged.startswith(before)
    # a line both carried and appended (a write taken for failed that had landed) shows once
    assert (
        kinds(with_tails(log + line("outcome", 10), [(T.format(11), second)])).count("outcome") == 1
    )


def test_a_kept_outcome_carries_the_last_lines_and_the_log_reads_whole(tmp_path: Path) -> None:
    store = ObjectLike(tmp_path / "store")
    first = "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"  # a Temporal run id: the run's first execution
    key = AgentKey(
        run_id="run-1", agent_id="a1", task_id="T-a1", execution_id=first, checkpoint="cp.json"
    )
    ledger = AttemptLedger.of(store, key)
    log_key = transcript_key("run-1", "a1")
    tail = LogTail(store, log_key)
    tail.add(log_line(log_key, "attempt") or b"")  # outside an event loop: written at once
    tail._lines = [log_line(log_key, "tool_result") or b"", log_line(log_key, "outcome") or b""]
    held = tail.for_outcome()
    assert kinds(held) == ["tool_result", "outcome"] and tail._lines == []
    ledger.complete(1, AgentOutcome(result="hi"), held)
    tail.flush()  # nothing left to append
    time.sleep(0.002)  # the leader's word comes later (a line's time is to the millisecond)
    append_event(store, log_key, "leader", point="result", verdict="accept")
    assert kinds(store.appended(log_key)) == ["attempt", "leader"]
    expected = ["attempt", "tool_result", "outcome", "leader"]
    for execution in (first, None):  # None: the run's first execution not known
        assert kinds(read_log(store, "run-1", "a1", execution, {})) == expected
    # a task whose id ends in this one's (agent "b-T-a1"): told apart, with the first
    # execution or without it (a Temporal run id, or "run", stands before a task's id)
    other = AttemptLedger.of(store, AgentKey(**{**key.__dict__, "task_id": "T-b-T-a1"}))
    other.complete(1, AgentOutcome(result="other"), line("other", 1))
    for execution in (first, None):
        assert kinds(read_log(store, "run-1", "a1", execution, {})) == expected
    assert has_log(store, "run-1", "a1", None) and not has_log(store, "run-1", "a2", None)
    kept = ledger.outcome()  # the carried lines do not disturb the outcome itself
    assert kept is not None and kept.result == "hi" and ledger.has_outcome()
    seen: dict[str, tuple[str, bytes]] = {}
    read_log(store, "run-1", "a1", first, seen)
    store.put(ledger.outcome_key, b"{}")  # a follower reads each kept outcome once
    assert kinds(read_log(store, "run-1", "a1", first, seen)) == expected


def test_on_a_local_disk_the_lines_are_appended_as_ever(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    log_key = transcript_key("run-1", "a1")
    tail = LogTail(store, log_key)
    tail._lines = [log_line(log_key, "outcome") or b""]
    assert tail.for_outcome() == b""  # kept to be appended: the file stays whole
    tail.flush()
    assert kinds((tmp_path / "store" / log_key).read_bytes()) == ["outcome"]


def test_lines_wait_for_an_earlier_batch_still_on_its_way(tmp_path: Path) -> None:
    """A batch queued for the store's writer thread would land after lines carried by the
    outcome: while one is on its way, the last lines are appended after it instead."""
    store = ObjectLike(tmp_path / "store")
    store.shared = True  # its appends go through the writer threads
    log_key = transcript_key("run-1", "a1")
    gate = threading.Event()
    real = transcripts._append
    transcripts._append = lambda *a: (gate.wait(10), real(*a))  # type: ignore[assignment]
    try:
        tail = LogTail(store, log_key)
        tail._lines = [log_line(log_key, "tool_call") or b""]
        tail.flush()  # queued, held at the gate
        tail._lines = [log_line(log_key, "outcome") or b""]
        assert transcripts._LOG_WRITER.busy(log_key)
        assert tail.for_outcome() == b"" and len(tail._lines) == 1
    finally:
        gate.set()
        transcripts._append = real
    assert transcripts.flush_logs(10) and not transcripts._LOG_WRITER.busy(log_key)
    tail._lines = [log_line(log_key, "outcome") or b""]
    assert kinds(tail.for_outcome()) == ["outcome"]


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


def test_a_follower_reading_by_length_sees_every_line_once_in_the_order_written(
    tmp_path: Path,
) -> None:
    """`log --follow` and the live page read the log again and go on from the length they had:
    the carried lines must land at its end, after a line another writer stored meanwhile (the
    leader's word on a stall), and before what comes after the outcome."""
    store = ObjectLike(tmp_path / "store")
    first = "0193b2c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"
    key = AgentKey(
        run_id="run-1", agent_id="a1", task_id="T-a1", execution_id=first, checkpoint="cp.json"
    )
    log_key = transcript_key("run-1", "a1")
    seen: dict[str, tuple[str, bytes]] = {}
    shown: list[str] = []
    offset = 0

    def follow() -> None:
        nonlocal offset
        data = read_log(store, "run-1", "a1", first, seen)[offset:]
        whole = data[: data.rfind(b"\n") + 1]
        offset += len(whole)
        shown.extend(kinds(whole))

    def later() -> None:
        time.sleep(0.002)  # (a line's time is to the millisecond)

    tail = LogTail(store, log_key)
    tail.add(log_line(log_key, "attempt") or b"")
    follow()
    later()
    tail._lines = [log_line(log_key, "tool_call") or b""]  # a batch, held
    later()
    append_event(store, log_key, "leader", point="stall", verdict="wait")  # another writer
    follow()
    later()
    tail._lines.append(log_line(log_key, "outcome") or b"")
    later()
    AttemptLedger.of(store, key).complete(1, AgentOutcome(result="ok"), tail.for_outcome())
    follow()
    later()
    append_event(store, log_key, "leader", point="result", verdict="accept")
    follow()
    assert shown == ["attempt", "leader", "tool_call", "outcome", "leader"], shown
    assert kinds(read_log(store, "run-1", "a1", first, {})) == shown  # (a new reader: the same)
