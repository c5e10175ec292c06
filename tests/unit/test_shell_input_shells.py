"""A wrapper given no command runs a shell, which reads its commands from its input: `chroot
NEWROOT` runs $SHELL -i, `runuser USER` (su's form) the user's shell, `sudo -s` likewise (sec13:
`printf %s "{{…}}" | chroot /` and `| runuser root` ran the value as commands past deny
shell(touch:*) — runuser's USER was read as a program named root). Judged by effect, in real
bash; the leader's replayed decisions keep 0.12.3's reading (patch shell-reading-round-13)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.leader.shell_readings import as_replayed
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

# (the programs are in /usr/sbin, not on the tests' PATH; chroot / keeps the machine's root and
# goes to /, so the canary is named by its full path)
PIPED = [
    "printf '%s' \"{{agent_1_result}}\" | /usr/sbin/chroot /",
    "printf '%s' \"{{agent_1_result}}\" | /usr/sbin/chroot --userspec=0:0 /",
    "printf '%s' \"{{agent_1_result}}\" | /usr/sbin/runuser root",
    "printf '%s' \"{{agent_1_result}}\" | /usr/sbin/runuser -l root",
    "printf '%s' \"{{agent_1_result}}\" | /usr/sbin/runuser - root",
]


def _arguments(template: str, tmp_path: Path) -> dict[str, object]:
    return rendered(template, f"touch {tmp_path}/ran")


@pytest.mark.parametrize("template", PIPED)
def test_the_value_runs_in_the_shell(template: str, tmp_path: Path) -> None:
    if shutil.which("chroot", path="/usr/sbin") is None or not Path("/usr/sbin/runuser").exists():
        pytest.skip("chroot/runuser are not installed")
    command, values = render_command(template, {"1": f"touch {tmp_path}/ran"}, {}, {})
    p = bash(command, values, tmp_path, timeout=20)
    if p.returncode and "Operation not permitted" in p.stderr:
        pytest.skip("this machine does not let the tests change root or user")
    assert (tmp_path / "ran").exists(), p.stderr


@pytest.mark.parametrize(
    "template",
    [
        *PIPED,
        "printf '%s' \"{{agent_1_result}}\" | sudo -s",
        "printf '%s' \"{{agent_1_result}}\" | sudo -i",
    ],
)
def test_a_value_piped_to_it_is_asked_for(template: str, tmp_path: Path) -> None:
    arguments = _arguments(template, tmp_path)
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    assert "reads its commands from its input" in decision.reason
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it: allowed (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "/usr/sbin/chroot /srv/root ls",
        "runuser -u app -- ls -la",
        "runuser -u app ls",
        "sudo -u app ls",
        "runuser root -c 'ls -la'",
    ],
)
def test_a_wrapper_given_its_command_is_read_as_before(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason


def test_runuser_in_su_form_runs_a_shell_not_a_program_named_for_the_user(tmp_path: Path) -> None:
    # (its words after USER are the shell's: `runuser root x.sh` runs the script x.sh)
    denied = decide(
        "shell", {"command": "runuser root -c 'touch x'"}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert denied.effect == "deny"


def test_the_leader_replays_its_decision_as_it_was_made(tmp_path: Path) -> None:
    arguments = _arguments(PIPED[0], tmp_path)

    def decided() -> str:
        return decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect

    assert as_replayed(decided, lambda patch: True) == "ask"
    asked: list[str] = []
    assert as_replayed(decided, lambda patch: asked.append(patch) or False) == "allow"
    assert asked == ["shell-reading-round-13"]
