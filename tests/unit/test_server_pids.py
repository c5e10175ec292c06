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


def test_up_after_the_home_was_moved_says_so_rather_than_that_temporal_is_up(
    tmp_path, monkeypatch, capsys
) -> None:
    # walk10: `mv .xsky elsewhere` while `up`'s server and worker ran, then `up` with the new
    # home: "Temporal is already up" — its database's folder gone, every write failed ("attempt
    # to write a readonly database"; `run`: "shard status unknown"); the worker wrote the runs'
    # files under the old home. Played by two sleeping processes with those command lines.
    import os
    import subprocess
    import sys
    import time

    import pytest

    from cli import server_cmd
    from xsky.config import load_settings
    from xsky.errors import UsageError

    gone = tmp_path / "old-home"  # never made: the folder the home was moved from
    home = tmp_path / "new-home"
    home.mkdir()
    nap = "import time; time.sleep(30)"
    server = subprocess.Popen(
        [sys.executable, "-c", nap, "start-dev", "--db-filename", str(gone / "temporal.db")]
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", nap, "worker.py"], env={**os.environ, "XSKY_HOME": str(gone)}
    )
    try:
        (home / "server.pid").write_text(str(server.pid))
        (home / "worker.pid").write_text(str(worker.pid))
        monkeypatch.setenv("XSKY_HOME", str(home))
        time.sleep(0.3)  # (their command lines and environments readable)
        with pytest.raises(UsageError, match="was XSKY_HOME moved") as e:
            server_cmd._check_moved(load_settings())
        assert str(gone / "temporal.db") in str(e.value) and "`starter.py down`" in str(e.value)
        said = capsys.readouterr().err
        assert f"started with its home in {gone}" in " ".join(said.split()), said
        # the database where the server was told: nothing to say
        gone.mkdir()
        (gone / "temporal.db").write_text("")
        server_cmd._check_moved(load_settings())
        assert "was XSKY_HOME moved" not in capsys.readouterr().err
    finally:
        for p in (server, worker):
            p.kill()
            p.wait()
