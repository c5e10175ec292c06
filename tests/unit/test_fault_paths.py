"""The fault paths' parts, without a server: an attempt's kept outcome and lease, a command's
record written by its watchdog before it exits, a full store said with its cause, the caps on
what a run keeps, one-sentence refusals, and the cut-off's reading of /proc."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.agents import lease as leases
from activities.agents.beat import Beat
from activities.agents.lease import Lease
from activities.agents.ledger import AttemptLedger
from activities.agents.storage import storage_problem
from activities.sandbox import cutoff, liveness
from activities.tools.shell import recorded_end
from xsky.leader.commands import Rejected
from xsky.leader.core import LeaderCore
from xsky.leader.limits import ANSWER_CHARS, NOTE_CHARS, NUDGES_PER_TASK, cut, over
from xsky.leader.state import AnswerRequest, NudgeRequest, PauseRequest
from xsky.plan.xml import parse_workflow
from xsky.runs import AgentOutcome, ProgressReport, RunInput
from xsky.wire_errors import strict_problem

NOW = datetime(2026, 1, 1, tzinfo=UTC)


# -- an attempt's outcome, kept -------------------------------------------------------------------


def test_a_kept_outcome_is_found_by_the_next_attempt_and_shown_as_returned(tmp_path: Path):
    ledger = AttemptLedger.at(tmp_path / "run" / "_attempts" / "x-T-1-v1-d1.jsonl")
    assert ledger.outcome() is None
    ledger.begin(1, 10.0)
    ledger.complete(1, AgentOutcome(result="42", attempt=1))
    start = ledger.begin(2, 10.0)
    assert start.previous is not None and start.previous.startswith("completed")
    kept = ledger.outcome()
    assert kept is not None and kept.result == "42" and kept.attempt == 1
    ledger.returned(2, kept)
    assert [e["kind"] for e in ledger.entries()] == ["started", "completed", "started", "returned"]


def test_an_attempt_whose_end_could_not_be_written_is_not_taken_for_a_lost_worker(tmp_path: Path):
    ledger = AttemptLedger.at(tmp_path / "l.jsonl")
    ledger.begin(1, 10.0)
    word = "no space left on the artifact store at /s: waiting 4s to write the result"
    start = ledger.begin(2, 10.0, last_word=word)
    assert start.after_error and start.previous == f"error: {word}"
    assert "worker lost" in (ledger.begin(3, 10.0, last_word="working").previous or "")


# -- a dispatch's lease ------------------------------------------------------------------------------


def beat() -> Beat:
    return Beat(task_id="T-1", dispatch=1, progress_interval=5.0)


async def test_a_later_attempt_waits_while_an_earlier_one_holds_a_live_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(leases, "POLL", 0.05)
    monkeypatch.setattr(leases, "RENEW", 0.05)
    path = tmp_path / "x.lease"
    settled = False
    order: list[str] = []
    monkeypatch.setattr(Beat, "running", lambda self: _no_heartbeats())
    monkeypatch.setattr(Beat, "progress", lambda self, note: order.append("said: " + note[:21]))

    async def first() -> None:
        lease = Lease.at(path, 1, ttl=5)
        async with lease.held(beat(), lambda: False):
            order.append("first runs")
            await asyncio.sleep(0.4)
            order.append("first ends")
        await lease.let_go(beat())  # (its end written first: activity.py)

    async def second() -> None:
        await asyncio.sleep(0.1)
        lease = Lease.at(path, 2, ttl=5)
        async with lease.held(beat(), lambda: settled):
            order.append("second runs")
        await lease.let_go(beat())

    await asyncio.gather(first(), second())
    assert order == ["first runs", "said: waiting for attempt 1", "first ends", "second runs"]
    assert not path.exists()


async def test_a_lapsed_lease_or_one_of_a_dead_process_here_is_not_waited_for(tmp_path: Path):
    path = tmp_path / "x.lease"
    path.write_text(
        json.dumps({"attempt": 1, "host": "elsewhere", "pid": 1, "at": time.time() - 30})
    )
    assert Lease.at(path, 2, ttl=5).holder() is not None
    assert not Lease.at(path, 2, ttl=5).holder().alive(5)  # type: ignore[union-attr]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    path.write_text(
        json.dumps({"attempt": 1, "host": socket.gethostname(), "pid": gone.pid, "at": time.time()})
    )
    assert not Lease.at(path, 2, ttl=5).holder().alive(5)  # type: ignore[union-attr]


class _no_heartbeats:
    """No activity here to heartbeat in."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *_: object) -> None:
        return None


# -- a command's end, recorded by its watchdog --------------------------------------------------------


async def test_a_commands_end_is_recorded_before_its_watchdog_exits(tmp_path: Path):
    record = tmp_path / "cmd.json"
    with liveness.PULSE_THREAD.pipe(stall=5) as fed:
        argv = liveness.watched(
            ["sh", "-c", "echo out; echo err >&2; exit 3"], fed, 5, record, 1024
        )
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, pass_fds=(fed,)
        )
        os.close(fed)
        out, err = await proc.communicate()
    assert proc.returncode == 3 and out == b"out\n" and err == b"err\n"
    done = recorded_end(record, 1024)
    assert done is not None and done.returncode == 3 and done.replayed
    assert done.stdout == "out\n" and done.stderr == "err\n"


async def test_a_command_of_a_worker_that_stops_answering_is_killed_and_not_recorded(
    tmp_path: Path,
):
    record = tmp_path / "cmd.json"
    read, write = os.pipe()  # fed by nobody: the worker is silent
    argv = liveness.watched(["sleep", "30"], read, 0.5, record, 1024)
    proc = await asyncio.create_subprocess_exec(
        *argv, pass_fds=(read,), stderr=asyncio.subprocess.PIPE
    )
    os.close(read)
    _, err = await asyncio.wait_for(proc.communicate(), 20)
    os.close(write)
    assert proc.returncode == liveness.LOST_EXIT and b"stopped answering" in err
    assert not record.exists() and recorded_end(record, 1024) is None


def test_a_record_on_this_machine_is_kept_for_a_retry_here_unless_an_error_came_after_it(
    tmp_path: Path,
):
    """With an object store the watchdog writes to the worker's disk. A retry on the same
    machine whose store holds no record keeps such a file (its worker died before it could put
    it in the store) — unless the attempt before ended in an error, which cleared the record,
    or it is a dispatch's first attempt (nothing of its dispatch can be anywhere)."""
    from activities.storage.local import LocalStore

    class NotLocal(LocalStore):
        def local(self, key: str) -> Path | None:
            return None  # as an S3 store: its objects are not files here

    home = tmp_path / "home"
    ledger = AttemptLedger(NotLocal(tmp_path / "store"), "run/_attempts/x-T-1-v1-d1.jsonl")

    def written() -> Path:
        path = home / "commands" / ledger.command_key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"status": 0, "stdoutB64": "", "stderrB64": ""}))
        return path

    path = written()
    assert ledger.command_record(home, fetch=True)[0] == path and path.exists()  # kept
    assert ledger.command_record(home, fetch=True, after_error=True)[0] == path
    assert not path.exists()  # an error came after it: the command runs again
    path = written()
    ledger.command_record(home, fetch=False)
    assert not path.exists()  # a first attempt: not its dispatch's
    path = written()
    ledger.forget_local_record(home)
    assert not path.exists()  # its attempt reported


# -- a full store -------------------------------------------------------------------------------------


def test_a_full_store_is_said_with_its_cause_and_other_errors_are_not():
    root = "the artifact store at /srv/store"
    assert storage_problem(OSError(errno.ENOSPC, "No space"), root) == (
        "no space left on the artifact store at /srv/store"
    )
    assert "quota" in (storage_problem(OSError(errno.EDQUOT, "Quota"), root) or "")
    assert storage_problem(OSError(errno.ENOENT, "No such file"), root) is None
    assert storage_problem(ValueError("x"), root) is None


# -- caps and refusals in the core --------------------------------------------------------------------


def core() -> LeaderCore:
    xml = (
        '<workflow name="c" taskId="c"><agent name="llm" id="1"><task>think</task><input>x</input></agent>'
        '<agent name="shell" id="2"><task>run</task><config>{"tool": "shell", "command": "true"}</config></agent>'
        "</workflow>"
    )
    return LeaderCore(RunInput(workflow=parse_workflow(xml)), "run-1", NOW)


def test_nudges_are_capped_in_size_and_number_and_refused_for_an_agent_that_cannot_read_them():
    c = core()
    c.checks.nudge(NudgeRequest(task_id="T-1", message="be brief"))
    with pytest.raises(Rejected, match="over the cap of 8,192"):
        c.checks.nudge(NudgeRequest(task_id="T-1", message="x" * 9000))
    with pytest.raises(Rejected, match="direct shell tool"):
        c.checks.nudge(NudgeRequest(task_id="T-2", message="hi"))
    for i in range(NUDGES_PER_TASK):
        c.people.nudge(NudgeRequest(task_id="T-1", message=f"n{i}"), NOW)
    with pytest.raises(Rejected, match=f"{NUDGES_PER_TASK} nudges already"):
        c.checks.nudge(NudgeRequest(task_id="T-1", message="one more"))


def test_answers_and_pause_reasons_over_their_caps_are_refused_with_the_cap():
    c = core()
    with pytest.raises(Rejected, match="over the cap of 1,000"):
        c.checks.pause(PauseRequest(reason="r" * 1001))
    c.checks.pause(PauseRequest(reason="lunch"))
    assert over("answer", "a" * (ANSWER_CHARS + 1), ANSWER_CHARS, "x") is not None
    with pytest.raises(Rejected):  # no such request; the cap is checked after it is found
        c.checks.answer(AnswerRequest(request_id="Q-9", text="a"))


def test_a_refusal_is_counted_on_the_board_and_written_in_the_permission_log():
    c = core()
    c.people.refuse("pause signal", "null", "the request must be a JSON object", NOW)
    assert c.state.audit.refused == 1
    assert any(
        "1 signal(s) refused (malformed, spoofed or not applicable)" in n for n in c.views.notices()
    )
    (entry,) = c.state.audit.entries
    assert entry.tool == "pause signal" and entry.effect == "deny" and entry.by == "person"
    assert entry.reason == "refused: the request must be a JSON object"


def test_a_late_nudge_refused_is_not_called_malformed_or_spoofed():
    """A well-formed nudge signal for an agent that has ended is refused as its update twin
    would be; the board's count does not call it malformed or spoofed (walk9)."""
    c = core()
    why = "T-1 has already ended (completed): a nudge reaches only agents that run or wait"
    c.people.refuse("nudge signal", '{"taskId": "T-1"}', why, NOW, "T-1")
    (note,) = [n for n in c.views.notices() if "refused" in n]
    assert "malformed or spoofed message" not in note, note
    assert (
        "1 signal(s) refused (malformed, spoofed or not applicable), the last: nudge signal: T-1 has already ended"
        in note
    )


def test_an_agents_long_progress_note_is_cut():
    c = core()
    c.dispatch(NOW)
    report = ProgressReport(task_id="T-1", dispatch=1, message="m" * 10_000)
    c.report_progress(report, NOW)
    note = c.tasks["1"].last_progress or ""
    assert len(note) <= NOTE_CHARS and note.endswith("characters cut]")
    assert cut("short", 10) == "short"


def test_a_signal_payload_is_checked_strictly_in_one_sentence():
    assert strict_problem(PauseRequest, None) is not None
    assert "unknown field(s) `frobnicate`" in (
        strict_problem(PauseRequest, {"frobnicate": 1}) or ""
    )
    assert "field `message` is missing" in (strict_problem(NudgeRequest, {"taskId": "T-1"}) or "")
    assert strict_problem(PauseRequest, {"cancelRunning": True, "reason": "x"}) is None


# -- the cut-off's view of the worker's connections ----------------------------------------------------


def test_the_cut_off_finds_a_processes_connections_to_the_server():
    assert cutoff._hex_address("0100007F:1F90") == ("127.0.0.1", 8080)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    conn = socket.create_connection(("127.0.0.1", port))
    try:
        found = cutoff.server_sockets(os.getpid(), {("127.0.0.1", port)})
        assert conn.fileno() in found
        assert cutoff.server_sockets(os.getpid(), {("127.0.0.1", 1)}) == []
    finally:
        conn.close()
        listener.close()


# -- a command's record where the store's disk cannot take it ------------------------------------


def _watchdog_forms() -> list[list[str]]:
    from activities.sandbox import native

    forms = [[sys.executable, "-I", "-S", str(native.PYTHON_FORM)]]
    compiled = native.compiled_watchdog()
    return forms + ([[str(compiled)]] if compiled is not None else [])


@pytest.mark.parametrize("form", range(2), ids=["python", "compiled"])
async def test_a_record_the_stores_disk_cannot_take_is_written_to_the_spare_place(
    tmp_path: Path, form: int
):
    """A chaos run: the artifact store's disk went read-only (or full) while a command ran,
    its record was lost, the worker was killed, and the retry ran the command again."""
    forms = _watchdog_forms()
    if form >= len(forms):
        pytest.skip("no C compiler: the compiled watchdog is not built here")
    record = tmp_path / "gone" / "cmd.json"  # a place that cannot take it
    spare = tmp_path / "spare.json"
    with liveness.PULSE_THREAD.pipe(stall=5) as fed:
        argv = [*forms[form], str(fed), "5", str(record), "1024"]
        argv += ["sh", "-c", f'echo "${{{liveness.SPARE_ENV}:-not given}}"; exit 4']
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            pass_fds=(fed,),
            env={**os.environ, liveness.SPARE_ENV: str(spare)},
        )
        os.close(fed)
        out, _ = await proc.communicate()
    assert out == b"not given\n"  # the watchdog's, not the command's
    assert not record.exists()
    done = recorded_end(spare, 1024)
    assert done is not None and done.returncode == 4 and done.stdout == "not given\n"


def test_a_local_stores_retry_returns_a_record_in_the_spare_place_unless_an_error_cleared_it(
    tmp_path: Path,
):
    from activities.storage.local import LocalStore

    home = tmp_path / "home"
    ledger = AttemptLedger(LocalStore(tmp_path / "store"), "run/_attempts/x-T-1-v1-d1.jsonl")
    here, publish = ledger.command_record(home, fetch=False)
    assert here == tmp_path / "store" / ledger.command_key and publish is None
    spare = ledger.command_spare(home)
    assert spare.parent == home / "commands" / "spare" and "/" not in spare.name
    spare.write_text(json.dumps({"status": 0, "stdoutB64": "", "stderrB64": ""}))
    assert ledger.command_record(home, fetch=True)[0] == spare  # the earlier attempt's end
    here.write_text(spare.read_text())
    assert ledger.command_record(home, fetch=True)[0] == here  # the store's own comes first
    here.unlink()
    assert ledger.command_record(home, fetch=True, after_error=True)[0] == here
    assert not spare.exists()  # an error came after it: the command runs again
    spare.write_text("{}")
    ledger.forget_local_record(home)
    assert not spare.exists()  # its attempt reported


def test_a_worker_lost_waiting_for_the_store_leaves_its_commands_record_standing(
    tmp_path: Path,
):
    """Its attempt counts as an error (its retries are bounded) but wrote none, so the record
    of the command it ran is not cleared: a retry returns it instead of running it again."""
    from activities.storage.local import LocalStore

    ledger = AttemptLedger(LocalStore(tmp_path / "store"), "run/_attempts/x-T-1-v1-d1.jsonl")
    waited = "the artifact store at /srv/store is read-only: waiting 4s to write the outcome"
    start = ledger.begin(2, 30.0, waited)
    assert start.after_error and not start.record_cleared
    ledger.record(2, "error", "exit 1")
    start = ledger.begin(3, 30.0, None)
    assert start.after_error and start.record_cleared


async def test_a_store_failing_as_an_attempt_ends_leaves_the_attempts_own_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Releasing the lease runs in the attempt's ``finally``: a store failing there raised in
    place of the attempt's own error (and whether it may be retried)."""
    monkeypatch.setattr(Beat, "running", lambda self: _no_heartbeats())
    lease = Lease.at(tmp_path / "x.lease", 1, ttl=5)
    lease.taken = True

    def failing() -> None:
        raise OSError(errno.EAGAIN, "the store fails")

    monkeypatch.setattr(lease, "_release", failing)
    await lease.let_go(beat())  # says so in the log, raises nothing
