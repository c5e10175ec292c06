"""A worker an earlier `demo` started read the demo's settings file, not the person's:
`up` says so, with the fix (cli/server_cmd.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli.server_cmd import ensure_worker
from xsky.config import load_settings


def test_up_says_when_the_running_worker_reads_the_old_demos_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("XSKY_HOME", str(home))
    settings = load_settings()
    demo_file = home / "demo" / "settings.json"
    for env, said in (({"XSKY_USER_SETTINGS": str(demo_file)}, True), ({}, False)):
        # (its command line names worker.py, as `up`'s does: a pid file's process is checked)
        proc = subprocess.Popen(["sh", "-c", "sleep 30", "worker.py"], env={**os.environ, **env})
        try:
            (home / "worker.pid").write_text(str(proc.pid))
            assert ensure_worker(settings) is False  # running: not started again
            err = capsys.readouterr().err
            assert ("earlier `demo`" in err) is said, err
        finally:
            proc.kill()
            proc.wait()
