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
