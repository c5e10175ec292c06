"""A plan path that is a named pipe is refused at once (opening it waited for a writer: the
command hung), for every command that reads a plan file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "command",
    [
        ["validate", "PLAN"],
        ["convert", "PLAN"],
        ["replan", "xsky-r-1", "--xml", "PLAN"],  # (read before the run is asked)
        ["fork", "xsky-r-1", "T-1", "--plan", "PLAN"],
    ],
)
def test_a_named_pipe_is_refused_without_waiting(command: list[str], tmp_path: Path) -> None:
    fifo = tmp_path / "ff.xml"
    os.mkfifo(fifo)
    env = {**os.environ, "TEMPORAL_ADDRESS": "127.0.0.1:1", "XSKY_HOME": str(tmp_path / "home")}
    argv = [str(fifo) if word == "PLAN" else word for word in command]
    done = subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), *argv],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
        env=env,
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, said
    assert (
        f"{fifo}: is a named pipe (FIFO), not a file; give the path of a workflow XML file" in said
    )
