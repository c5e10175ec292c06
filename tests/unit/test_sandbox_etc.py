"""A sandbox's /etc copy goes with its worker process: at its exit, or swept by the next worker
when it was killed (activities/sandbox/view.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from activities.sandbox.view import sweep_etc_folders


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no /proc entry (unless reused at once, which the test checks)


def test_a_dead_workers_etc_copy_is_swept_and_a_live_ones_is_kept(tmp_path: Path) -> None:
    dead = _dead_pid()
    assert not Path(f"/proc/{dead}").exists()
    gone = tmp_path / f"xsky-etc-{dead}-abc123"
    alive = tmp_path / f"xsky-etc-{os.getpid()}-def456"
    older = tmp_path / "xsky-etc-q1w2e3r4"  # named before copies carried their process
    for folder in (gone, alive, older):
        (folder / "ssl").mkdir(parents=True)
        (folder / "hosts").write_text("127.0.0.1 localhost\n")
    assert sweep_etc_folders(tmp_path) == [gone]
    assert not gone.exists() and alive.exists() and older.exists()


def test_a_worker_process_removes_its_etc_copy_when_it_exits(tmp_path: Path) -> None:
    code = (
        "import tempfile, sys; tempfile.tempdir = sys.argv[1]\n"
        "from activities.sandbox.view import etc_folder\n"
        "print(etc_folder())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout
    made = Path(out.strip())
    assert made.parent == tmp_path and made.name.startswith("xsky-etc-")
    assert not made.exists()  # removed at the process's exit
