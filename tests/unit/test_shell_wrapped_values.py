"""A {{…}} value (XSKY_V1) never names the program that runs, nor an option bash reads as a
variable's name (a third review: `xargs "{{agent_1_result}}"`, `timeout 5 "{{…}}" f`,
`env "{{…}}" bash -c ls` and `printf "{{…}}" x` ran what a result said, and `env LD_PRELOAD=…`
was allowed where `LD_PRELOAD=… cmd` is refused). Each premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import bash
from xsky.security.shell_parse import ShellParseError, split_command

# (command, the value, what it makes bash do)
RUN_BY_A_VALUE = [
    ('echo "$W/ran" | xargs "${XSKY_V1}"', "touch"),
    ('timeout 5 "${XSKY_V1}" "$W/ran"', "touch"),
    ('nice "${XSKY_V1}" "$W/ran"', "touch"),
    ('command "${XSKY_V1}" "$W/ran"', "touch"),
    ('(exec "${XSKY_V1}" "$W/ran")', "touch"),
    ('find /dev/null -exec "${XSKY_V1}" "$W/ran" \\;', "touch"),
    ('env "${XSKY_V1}" bash -c "ls >/dev/null"', 'BASH_FUNC_ls%%=() { touch "$W/ran"; }'),
    ('printf "${XSKY_V1}" done', '-va[$(touch "$W/ran")]'),
]


@pytest.mark.parametrize(("command", "value"), RUN_BY_A_VALUE)
def test_bash_runs_what_the_value_says(command: str, value: str, tmp_path: Path) -> None:
    bash(command, {"XSKY_V1": value, "W": str(tmp_path)}, timeout=10)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("command", "value"), RUN_BY_A_VALUE)
def test_the_checker_cannot_check_what_a_value_runs(command: str, value: str) -> None:
    with pytest.raises(ShellParseError):
        split_command(command)


@pytest.mark.parametrize(
    "command",
    ["env LD_PRELOAD=/w/x.so ls", "env PATH=/w/bin ls", "env 'BASH_FUNC_ls%%=() { id; }' bash"],
)
def test_env_sets_what_an_assignment_would(command: str) -> None:
    with pytest.raises(ShellParseError) as e:
        split_command(command)
    assert e.value.forbidden


@pytest.mark.parametrize(
    "command",
    [
        "env LANG=C sort f.txt",
        'echo a | xargs -n1 echo "${XSKY_V1}"',
        'timeout 5 grep -c "${XSKY_V1}" f.txt',
        "printf '$%d\\n' 5",
        'printf "%s\\n" "${XSKY_V1}"',
        'find . -name "${XSKY_V1}" -exec ls {} \\;',
    ],
)
def test_a_value_given_as_data_is_still_checked_as_before(command: str) -> None:
    assert split_command(command)
