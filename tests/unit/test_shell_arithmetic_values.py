"""A {{…}} value (XSKY_V1) is never code: the checker asks for the places bash evaluates a
word as arithmetic, where a variable holding 'a[$(cmd)]' runs cmd (a security review: a
result 'a[$(rm -f precious.txt)0]' in `let n={{agent_1_result}}+1` ran the rm a deny rule
refused)."""

from __future__ import annotations

import subprocess

import pytest

from xsky.security.shell_parse import ShellParseError, split_command

PAYLOAD = "a[$(echo RAN >&2)0]"

EVALUATED = [
    'declare -i n="${XSKY_V1}"; echo $n',
    'typeset -i n="${XSKY_V1}"',
    'let n="${XSKY_V1}"+1',
    'echo "${XSKY_V1:0:${XSKY_V1}}"',
    'echo "${XSKY_V1:${XSKY_V1}}"',
    'set -- 1 2; echo "${@:$XSKY_V1}"',
    'unset "${XSKY_V1}"',
    'test -v "${XSKY_V1}" && echo set',
    'printf -v "${XSKY_V1}" x',
    'read "${XSKY_V1}" < /dev/null',
    'declare -n r="${XSKY_V1}"; echo "$r"',
    # an integer or name attribute given first, the value after it (a second review)
    'declare -i n; n="${XSKY_V1}"; echo $n',
    'declare -n r; r="${XSKY_V1}"; echo "$r"',
    'f() { local -i n; n=$1; }; f "${XSKY_V1}"',
    # bash's own integer variables
    'RANDOM="${XSKY_V1}"; echo ok',
    'SRANDOM="${XSKY_V1}"; echo ok',
    'for RANDOM in "${XSKY_V1}"; do :; done',
    'read OPTIND <<< "${XSKY_V1}"',
    'printf -v HISTCMD %s "${XSKY_V1}"',
    # a trap's action is a command line
    'trap "${XSKY_V1}" EXIT',
]


@pytest.mark.parametrize("command", EVALUATED)
def test_bash_runs_a_value_there(command: str) -> None:
    # the premise: bash itself runs the value's substitution in each of these commands
    ran = subprocess.run(
        ["bash", "-c", "a=(1 2); " + command],  # (unset evaluates it once a is an array)
        env={"XSKY_V1": PAYLOAD, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert "RAN" in ran.stderr


@pytest.mark.parametrize("command", EVALUATED)
def test_the_checker_cannot_check_a_value_where_bash_evaluates_it(command: str) -> None:
    with pytest.raises(ShellParseError):
        split_command(command)


@pytest.mark.parametrize(
    "command",
    [
        'echo "${XSKY_V1}" | grep -c x',
        'export FOO="${XSKY_V1}"; printf "%s" "$FOO"',
        'echo "${XSKY_V1:-none}" "${XSKY_V1: -3}" "${XSKY_V1:1:2}" "${a[@]}" "${a[3]}" "${@:2}"',
        "let n=5+1; RANDOM=42; local x=1; declare -a b; trap - EXIT",
        "read -r line < f.txt; unset line; printf -v out '%s' x; test -v HOME",
    ],
)
def test_plain_forms_are_still_checked_as_before(command: str) -> None:
    assert split_command(command)


def test_a_traps_action_is_checked_as_the_command_line_it_is() -> None:
    # `trap "rm -f x" EXIT` ran rm at exit with no rule seeing it: its parts are recorded now
    assert ["rm", "-f", "x"] in [p.argv for p in split_command('trap "rm -f x" EXIT')]
