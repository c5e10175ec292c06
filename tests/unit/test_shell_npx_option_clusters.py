"""npm reads a cluster of short options letter by letter: `npx -yc 'touch ran'` is --yes --call,
and ran touch past deny shell(touch:*) unasked for a role holding shell (sec11; only -c alone,
--call and its prefixes were read)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.security.permissions import decide

COMMAND = "npx -yc 'touch ran'"


def test_the_cluster_runs_the_command_line(tmp_path: Path) -> None:
    if shutil.which("npx") is None:
        pytest.skip("npx is not installed")
    bash(COMMAND, {"HOME": str(tmp_path)}, tmp_path, timeout=120)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", [COMMAND, "npm exec -yc 'touch ran'"])
def test_it_is_checked_as_that_command_line(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "deny", decision.reason
