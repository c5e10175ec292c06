"""A git option that runs a command line, inside a cluster of short options, is checked as the
command line it is (sec11: `git rebase -qx 'touch ran' HEAD~1` ran touch past deny
shell(touch:*) unasked for a role holding shell — only `-x` written first was read). The premise
is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.security.permissions import decide

REPO = (
    "git init -q . && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m a && "
    "git -c user.email=a@b -c user.name=a commit -q --allow-empty -m b"
)
CLUSTERED = ["git rebase -qx 'touch ran' HEAD~1", "git rebase -qx'touch ran' HEAD~1"]


@pytest.mark.parametrize("command", CLUSTERED)
def test_the_clustered_option_runs_its_command_line(command: str, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    bash(REPO, env, tmp_path)
    bash(command, env, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", CLUSTERED)
def test_it_is_checked_as_that_command_line(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "deny", decision.reason


def test_a_cluster_without_it_is_not(tmp_path: Path) -> None:
    decision = decide(
        "shell", {"command": "git rebase -qi HEAD~1"}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert "touch" not in decision.reason
