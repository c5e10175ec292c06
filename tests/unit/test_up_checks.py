"""`up` and `server` say what is wrong where they started or trusted the wrong thing: a worker
of this home serving another queue, a server of this home at another address (two servers on
one database), a port something else answers on, a dev server that would not start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.server_cmd import ensure_server, ensure_worker
from xsky.config import load_settings
from xsky.errors import UsageError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("XSKY_HOME", str(folder))
    monkeypatch.setenv("TEMPORAL_ADDRESS", f"localhost:{free_port()}")
    monkeypatch.setenv("XSKY_TASK_QUEUE", "mine")
    return folder


def sleeper(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    code = "import time; time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env)
    # Started as `up` starts one, long before anyone asks: its /proc entries are shown only
    # once its start is through (a moment after Popen returns, they read empty).
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{proc.pid}/environ").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc


def test_up_refuses_when_this_homes_worker_serves_another_queue(home: Path) -> None:
    """`run` said no worker serves queue 'other', `up` said "the worker is already running"
    (it served 'mine'), and round again."""
    proc = sleeper("worker.py", env={**os.environ, "XSKY_TASK_QUEUE": "other"})
    try:
        (home / "worker.pid").write_text(str(proc.pid))
        with pytest.raises(UsageError) as e:
            ensure_worker(load_settings())
        said = str(e.value)
        assert "serves task queue 'other'" in said and "not 'mine'" in said, said
        assert "XSKY_HOME" in said
    finally:
        proc.kill()
        proc.wait()
    same = sleeper("worker.py", env=dict(os.environ))  # the same queue: running, nothing started
    try:
        (home / "worker.pid").write_text(str(same.pid))
        assert ensure_worker(load_settings()) is False
    finally:
        same.kill()
        same.wait()


def test_up_refuses_a_second_server_on_this_homes_database(home: Path) -> None:
    """With TEMPORAL_ADDRESS changed, `up` started a second dev server on the same SQLite file
    and `down` stopped only the newer one."""
    other = free_port()
    proc = sleeper("start-dev", "--ip", "127.0.0.1", "--port", str(other))
    try:
        (home / "server.pid").write_text(str(proc.pid))
        with pytest.raises(UsageError) as e:
            ensure_server(load_settings())
        said = str(e.value)
        assert f"running at 127.0.0.1:{other}" in said and str(home) in said, said
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def not_temporal() -> Iterator[int]:
    """A port something other than Temporal listens on: it takes a connection and closes it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join()
    server.close()


def test_up_does_not_call_any_listener_a_temporal_server(
    home: Path, not_temporal: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", f"localhost:{not_temporal}")
    with pytest.raises(UsageError) as e:
        ensure_server(load_settings())
    assert "it is not a Temporal server" in str(e.value), str(e.value)


def test_a_pid_file_naming_another_program_is_not_ours(home: Path) -> None:
    """A pid file outlives a reboot and its pid goes to another process: `up` refused to
    start ("running at another address") and `down` would have stopped that process."""
    from cli.server_cmd import _pid_file, _read_pid

    other = sleeper()
    try:
        (home / "server.pid").write_text(str(other.pid))
        (home / "worker.pid").write_text(str(other.pid))
        settings = load_settings()
        assert _read_pid(_pid_file(settings, "server")) is None
        assert _read_pid(_pid_file(settings, "worker")) is None
        assert other.poll() is None  # left alone
    finally:
        other.kill()
        other.wait()


def test_a_dev_server_that_will_not_start_says_why_from_its_log(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Web UI port in use: a RuntimeError traceback that said only "exited with status 1"."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("XSKY_UI_PORT", str(taken.getsockname()[1]))
        with pytest.raises(UsageError) as e:
            ensure_server(load_settings())
    said = str(e.value)
    assert "exited with status" in said and "pick another port" in said, said
    assert "temporal.log" in said and "can't set UI port" in said, said


def test_a_home_up_makes_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The home holds temporal.db (every run's history, results, context values), logs and
    transcripts, written readable by all: made 0755, any local user read them."""
    fresh = tmp_path / "new-home"
    monkeypatch.setenv("XSKY_HOME", str(fresh))
    monkeypatch.setenv("TEMPORAL_ADDRESS", f"localhost:{free_port()}")
    with socket.socket() as taken:  # (the server then fails at once: only the home is wanted)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("XSKY_UI_PORT", str(taken.getsockname()[1]))
        with pytest.raises(UsageError):
            ensure_server(load_settings())
    assert fresh.stat().st_mode & 0o777 == 0o700


def test_up_says_why_the_worker_it_started_stopped(home: Path) -> None:
    """`up` said only "the worker exited at once (status 1); see …/worker.log": the worker's
    own sentence (here: no Temporal at TEMPORAL_ADDRESS; a store refusing it is said the same
    way) is said where the person typed `up`."""
    with pytest.raises(UsageError) as e:
        ensure_worker(load_settings())
    said = str(e.value)
    assert "the worker exited at once" in said and "worker.log" in said, said
    assert "worker.py: cannot reach Temporal at localhost:" in said, said


def test_a_home_the_worker_makes_is_private(tmp_path: Path) -> None:
    """worker.py started on a home not made yet made it 0755 (and the transcripts in it were
    read by any local user): it is made 0700, as `up` makes it."""
    import subprocess

    from tests.conftest import ROOT

    fresh = tmp_path / "worker-home"
    env = {**os.environ, "XSKY_HOME": str(fresh), "TEMPORAL_ADDRESS": f"localhost:{free_port()}"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "worker.py")], env=env, capture_output=True, timeout=60
    )
    assert done.returncode != 0 and b"cannot reach Temporal" in done.stderr  # (no server there)
    assert fresh.stat().st_mode & 0o777 == 0o700


def test_down_says_a_server_it_did_not_start_still_answers(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`up` run in another folder keeps its pids in that folder's .xsky: `down` here said
    "not running" and nothing else, while that server and worker went on. It names this home
    and says that a server answers at the address, with the workers polling its queue."""
    import argparse

    from cli import server_cmd

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        monkeypatch.setenv("TEMPORAL_ADDRESS", f"127.0.0.1:{listener.getsockname()[1]}")
        monkeypatch.setattr(server_cmd, "_other_workers", lambda settings: ["4573@vm"])
        assert server_cmd.cmd_down(argparse.Namespace()) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert f"server: not running (nothing started by `up` with this home, {home})" in said, said
    assert "a Temporal server answers at 127.0.0.1:" in said and "(4573@vm)" in said, said
    assert "run `starter.py down` there, or with that XSKY_HOME" in said, said


def test_a_second_up_on_this_homes_database_says_so_not_ports(home: Path) -> None:
    """chaos15: two `up` at once on one home — the second dev server finds the database locked
    (SQLITE_BUSY) and `up` advised picking another port."""
    import sqlite3

    held = sqlite3.connect(home / "temporal.db", timeout=0)
    held.execute("BEGIN EXCLUSIVE")  # as the first `up`'s server holds it while it sets up
    try:
        with pytest.raises(UsageError) as e:
            ensure_server(load_settings())
    finally:
        held.rollback()
        held.close()
    said = str(e.value)
    assert "another `starter.py up` is starting this XSKY_HOME" in said, said
    assert "pick another port" not in said, said
