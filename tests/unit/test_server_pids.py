"""`up` and `down`: the pid files of the server and the worker this home started."""

from __future__ import annotations


def test_a_worker_killed_but_not_yet_reaped_is_not_taken_for_a_running_one(tmp_path) -> None:
    # `up` right after a SIGKILL said "the worker is already running" of a defunct process
    import subprocess
    import time

    from cli.server_cmd import _read_pid

    child = subprocess.Popen(["sleep", "0.05"])
    try:
        time.sleep(0.5)  # ended; its parent (this test) has not reaped it
        pid_file = tmp_path / "worker.pid"
        pid_file.write_text(str(child.pid))
        assert _read_pid(pid_file) is None and not pid_file.exists()
    finally:
        child.wait()


def test_a_pid_file_naming_no_single_process_is_not_taken_for_ours(tmp_path, monkeypatch) -> None:
    # `down` with a worker.pid holding -1 sent SIGTERM to every process it could signal
    # (kill(-1): as root, the whole machine), 0 its own process group, -N a group: a pid
    # file is a file in XSKY_HOME (`.xsky` of the folder it runs in by default), not proof
    import pytest

    from cli import server_cmd

    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(server_cmd.os, "kill", lambda pid, sig: signalled.append((pid, sig)))
    for text in ("-1", "0", "-4242", "1"):
        pid_file = tmp_path / "worker.pid"
        pid_file.write_text(text)
        assert server_cmd._read_pid(pid_file) is None, text
        assert not pid_file.exists()
    assert signalled == []

    monkeypatch.setenv("XSKY_HOME", str(tmp_path))
    (tmp_path / "worker.pid").write_text("-1")
    (tmp_path / "server.pid").write_text("-1")
    stopped: list[int] = []
    monkeypatch.setattr(server_cmd, "stop_pid", stopped.append)
    assert server_cmd.cmd_down(pytest.importorskip("argparse").Namespace()) == 0
    assert stopped == []
