"""A wrapper's options read as getopt reads them (sec11): an option the checker's table did not
list, a unique prefix of one it did, or a valued letter ending a cluster of short options took
the option's value for the program the wrapper runs — `xargs -rn 1 touch x` was checked as the
program `1`, and touch ran past deny shell(touch:*) unasked for a role holding shell; a value
check of the wrapped command was skipped too (`timeout -vk 1 5 sed "s/a/{{…}}/"` ran a value's
`1e cmd`). Each premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

MISREAD = [
    "xargs --max-chars 1000 touch ran < /dev/null",
    "xargs --arg-file /dev/null touch ran",
    "xargs --delimiter x touch ran < /dev/null",
    "xargs --process-slot-var V touch ran < /dev/null",
    "xargs --max-c 1000 touch ran < /dev/null",
    "xargs -rn 1 touch ran <<< x",
    "xargs -0n 1 touch ran <<< x",
    "xargs -rI X touch ran <<< x",
    "timeout --sig KILL 5 touch ran",
    "timeout -vk 1 5 touch ran",
    "nice --adj 5 touch ran",
    "stdbuf --output L touch ran",
    "stdbuf --out L touch ran",
    "ionice --class 3 touch ran",
    "ionice -tc 3 touch ran",
    "flock --conflict-exit-code 1 lock touch ran",
    "flock -nw 1 lock touch ran",
    "env -iu X touch ran",
    "env --u X touch ran",
    "exec -ca x touch ran",
]


@pytest.mark.parametrize("command", MISREAD)
def test_the_wrapper_runs_the_program_after_its_option_value(command: str, tmp_path: Path) -> None:
    bash(command, {"HOME": str(tmp_path)}, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", MISREAD)
def test_the_wrapped_program_is_the_one_checked(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "deny", decision.reason
    assert "shell(touch:*)" in decision.reason


def test_a_value_check_of_the_wrapped_command_is_kept(tmp_path: Path) -> None:
    template = 'timeout -vk 1 5 sed "s/a/{{agent_1_result}}/" f.txt'
    command, values = render_command(template, {"1": "x/\n1e touch ran\n#"}, {}, {})
    bash("echo a > f.txt", {}, tmp_path)
    bash(command, values, tmp_path)
    assert (tmp_path / "ran").exists()  # (the premise)
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason


def test_a_long_option_the_checker_does_not_know_is_asked_for(tmp_path: Path) -> None:
    decision = decide(
        "shell", {"command": "timeout --frobnicate 5 ls"}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "timeout 5 ls",
        "timeout -s KILL 5 ls",
        "timeout --signal=KILL --preserve-status 5 ls",
        "nice -n 5 ls",
        "nice -5 ls",
        "xargs -0 -n1 ls",
        "xargs -r -I{} ls {}",
        "env -i A=1 ls",
        "stdbuf -oL ls",
        "flock -n lock ls",
        "ionice -c3 ls",
    ],
)
def test_ordinary_wrapped_calls_stay_allowed(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason


@pytest.mark.parametrize(
    "command",
    ['runuser root --command "touch ran"', 'runuser root --command="touch ran"'],
)
def test_runuser_long_command_option_is_checked(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "deny", decision.reason


@pytest.mark.parametrize("command", ['env --split "touch ran"', 'env --spl="touch ran"'])
def test_env_split_string_by_a_prefix_is_checked(command: str, tmp_path: Path) -> None:
    # sec11: --split-string by a unique prefix was not read as a command line
    bash(command, {"HOME": str(tmp_path)}, tmp_path)
    assert (tmp_path / "ran").exists()
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "deny", decision.reason
