"""What the local store appends (an agent's transcript: results, tool calls and the values
given to them) is its owner's alone, as what it puts is (a third review: transcripts were
0644, and a home a worker made itself is 0755 — any local user read them)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from activities.storage.local import LocalStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_appended_file_is_no_one_elses_to_read(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask: open() makes 0644
    try:
        store = LocalStore(tmp_path)
        store.append("run-1/T-1/transcript.jsonl", b'{"result": "secret"}\n')
        store.append("run-1/T-1/transcript.jsonl", b'{"result": "more"}\n')
        store.put("run-1/T-1/result.txt", b"secret")
    finally:
        os.umask(old)
    transcript = tmp_path / "run-1/T-1/transcript.jsonl"
    assert _mode(transcript) & 0o077 == 0, oct(_mode(transcript))
    assert _mode(transcript) & 0o077 == _mode(tmp_path / "run-1/T-1/result.txt") & 0o077
    assert store.appended("run-1/T-1/transcript.jsonl").count(b"\n") == 2


def test_one_appended_to_before_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "run-1/T-1/transcript.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"old\n")
    path.chmod(0o644)
    LocalStore(tmp_path).append("run-1/T-1/transcript.jsonl", b"new\n")
    assert _mode(path) & 0o007 == 0 and path.read_bytes() == b"old\nnew\n"


def test_the_live_pages_event_logs_are_no_one_elses_to_read(tmp_path: Path) -> None:
    from client.events import EventLog
    from xsky.leader.run_events import RunPicture

    old = os.umask(0o022)
    try:
        log = EventLog("xsky-run-1", tmp_path / "ui-events")
        log.add([("request.opened", {"id": "Q-1", "text": "the agent's question"})])
        log.keep(RunPicture(run="xsky-run-1"))
    finally:
        os.umask(old)
    folder = tmp_path / "ui-events"
    assert _mode(folder) & 0o077 == 0, oct(_mode(folder))
    for file in folder.iterdir():
        assert _mode(file) & 0o077 == 0, (file.name, oct(_mode(file)))
    assert len(EventLog("xsky-run-1", folder).events) == 1


def test_a_file_put_new_makes_is_no_one_elses_to_read(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = LocalStore(tmp_path)
        assert store.put_new("run-1/_attempts/claim.json", b'{"by": "w1"}')
        assert not store.put_new("run-1/_attempts/claim.json", b'{"by": "w2"}')
    finally:
        os.umask(old)
    assert _mode(tmp_path / "run-1/_attempts/claim.json") & 0o077 == 0
    assert store.get("run-1/_attempts/claim.json") == b'{"by": "w1"}'
