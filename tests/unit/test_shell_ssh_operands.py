"""ssh's options' values are not its operands: `ssh -p 2222 host`, `ssh -J bastion host`, `ssh -l
me host`, `ssh -o ConnectTimeout=5 host` connect and run nothing there, and were asked as running
a command on another machine (sec13: false asks, review15's list); a remote command still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of


@pytest.mark.parametrize(
    "command",
    [
        "ssh -p 2222 host",
        "ssh -J bastion host",
        "ssh -l me host",
        "ssh -i ~/.ssh/key -p 22 me@host",
    ],
)
def test_connecting_is_not_running_a_remote_command(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it: asked (a leader's replay keeps that)
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path)).effect == (
            "ask"
        )


@pytest.mark.parametrize(
    "command",
    [
        "ssh host ls",
        "ssh -p 2222 host ls",
        "ssh -J bastion host uptime",
        "ssh -- host ls",
        "ssh -tp 22 host ls",
        "ssh -o StrictHostKeyChecking=no host ls",
    ],
)
def test_a_remote_command_is_asked_for(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
