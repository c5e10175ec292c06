"""Programs that run a command they are given, or a line of their input, and an interpreter
called by a versioned name are asked for (sec11: each ran touch past deny shell(touch:*) unasked
for a role holding shell — `logsave log touch x`, `run-parts DIR`, `ed` with a `!cmd` line or a
file named '!cmd', vim by its other names (`view -es -c '!cmd'`), `python3.11 -c '…'`). Each
premise is checked with real bash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.security.permissions import decide

SETUP = "mkdir d && printf '#!/bin/sh\\ntouch ran\\n' > d/a && chmod +x d/a && echo a > f.txt"
RUNS = [
    ("logsave", "logsave log touch ran"),
    ("run-parts", "run-parts --regex=. ./d"),
    ("ed", "ed -s f.txt <<< '!touch ran'"),
    ("ed", "ed -s '!touch ran' < /dev/null"),
    ("view", "view -es -c '!touch ran' -c q"),
    ("python3.11", "python3.11 -c 'import os; os.system(\"touch ran\")'"),
]


@pytest.mark.parametrize(("program", "command"), RUNS)
def test_the_command_runs(program: str, command: str, tmp_path: Path) -> None:
    if shutil.which(program, path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
        pytest.skip(f"{program} is not installed")
    bash(SETUP, {}, tmp_path)
    bash(command, {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)}, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("program", "command"), RUNS)
def test_it_is_asked_for(program: str, command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
