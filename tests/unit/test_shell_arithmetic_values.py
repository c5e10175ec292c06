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


# A value bash reads again as code outside arithmetic (a third review): a declarer gives an
# array a value that looks like `(…)` — it is a compound assignment, expanded again — and
# compgen's -W word list is expanded again. Each ran cmd with real bash.
CODE_AGAIN = [
    'declare -a files="${XSKY_V1}"',
    'f() { local -a xs="${XSKY_V1}"; }; f',
    'typeset -A m="${XSKY_V1}"',
    'readonly -a r="${XSKY_V1}"',
    'declare -ga g="${XSKY_V1}"',
    'declare -a arr; declare arr="${XSKY_V1}"',  # made an array first
    'f() { declare -g arr="${XSKY_V1}"; }; declare -a arr; f',  # …or before the function runs
    'declare -a "arr=${XSKY_V1}"',
    'compgen -W "${XSKY_V1}" -- a',
]
AGAIN_PAYLOAD = "($(echo RAN >&2))"


@pytest.mark.parametrize("command", CODE_AGAIN)
def test_bash_runs_a_value_a_declarer_or_compgen_reads_again(command: str) -> None:
    value = "$(echo RAN >&2)" if command.startswith("compgen") else AGAIN_PAYLOAD
    ran = subprocess.run(
        ["bash", "-c", command],
        env={"XSKY_V1": value, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert "RAN" in ran.stderr


@pytest.mark.parametrize("command", CODE_AGAIN)
def test_the_checker_cannot_check_a_value_read_again(command: str) -> None:
    with pytest.raises(ShellParseError):
        split_command(command)


def test_callbacks_of_mapfile_and_compgen_are_checked_as_command_lines() -> None:
    # `mapfile -C 'rm -rf x #' -c 1 a < f` ran rm with no rule seeing it
    for command in ("mapfile -C 'rm -rf x #' -c 1 a < f", "compgen -C 'rm -rf x' a"):
        assert ["rm", "-rf", "x"] in [p.argv for p in split_command(command)], command


@pytest.mark.parametrize(
    "command",
    [
        'declare x="${XSKY_V1}"; local y="${XSKY_V1}"',
        "declare -a b=(1 2); declare -A m; m[k]=1",
        "declare -a files; files=(a b)",
        'compgen -W "a b c" -- a',
        "mapfile -t lines < f.txt",
    ],
)
def test_scalar_and_literal_forms_are_still_checked_as_before(command: str) -> None:
    try:
        assert split_command(command)
    except ShellParseError as e:
        # bashlex does not parse every array literal; that was asked for before too
        assert "cannot be parsed" in str(e)
