"""Forms that run a command line the checker did not read (a third review, each run with real
bash under a deny rule that refused what it ran): -c among other short options of a shell
(`bash -ec 'rm …'`), env's -S in a cluster or as --split-string=, runuser -c, an alias's value, `hash -p` giving a name another program, wrappers
the table lacked (taskset, chrt, prlimit, setpriv, runuser, strace, ltrace, unbuffer, fakeroot),
and the variables `PATH=…` may not set given by read, printf -v, for or getopts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import bash
from xsky.security.shell_parse import ShellParseError, split_command

RUNS_RM = [
    "bash -ec 'rm -f \"$W/x\"'",
    "bash -xc 'rm -f \"$W/x\"'",
    "bash -c -e 'rm -f \"$W/x\"'",
    "env -iS'rm -f {W}/x'",
    "env --split-string='rm -f {W}/x'",
    'taskset 1 rm -f "$W/x"',
    'prlimit --nofile=100 rm -f "$W/x"',
    'setpriv rm -f "$W/x"',
    "shopt -s expand_aliases; alias ll='rm -f \"$W/x\"'\nll",
]


@pytest.mark.parametrize("command", RUNS_RM)
def test_bash_runs_rm_there(command: str, tmp_path: Path) -> None:
    (tmp_path / "x").write_text("precious")
    bash(command.replace("{W}", str(tmp_path)), {"W": str(tmp_path)}, timeout=10)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("command", RUNS_RM)
def test_the_checker_sees_the_rm(command: str) -> None:
    assert "rm" in [p.argv[0] for p in split_command(command)]


@pytest.mark.parametrize(
    "command",
    [
        "read PATH <<< /w/bin; ls",
        "printf -v LD_PRELOAD %s /w/x.so; export LD_PRELOAD; ls",
        "for PATH in /w/bin; do ls; done",
        "getopts a BASH_ENV",
    ],
)
def test_a_name_made_to_run_another_program_is_not_checked_as_allowed(command: str) -> None:
    with pytest.raises(ShellParseError):
        split_command(command)


@pytest.mark.parametrize(
    "command",
    [
        "bash script.sh",
        "bash -e script.sh arg",
        "env -i LANG=C sort f",
        "flock lock make",
        'read -r line < f; printf -v out %s x; for f in *.txt; do wc -l "$f"; done',
        "alias",
        "hash -r",
    ],
)
def test_ordinary_forms_are_read_as_before(command: str) -> None:
    assert split_command(command)


def test_hash_p_is_asked_for() -> None:
    from xsky.security.permissions import decide
    from xsky.security.roles import BUILTIN_ROLES

    d = decide("shell", {"command": "hash -p /bin/rm ls; ls -rf x"}, BUILTIN_ROLES["shell"])
    assert d.effect == "ask" and "hash -p" in d.reason, d.reason


@pytest.mark.parametrize(
    "command",
    [
        "perl -ne 'print if /x/' f",
        "python3 -Bc 'print(1)'",
        "python3 -c'print(1)'",
        "node -pe '1+1'",
        "perl -lne 'print if /'\"${XSKY_V1}\"'/' f",  # a {{…}} value inside perl code
    ],
)
def test_code_given_to_an_interpreter_in_a_cluster_of_options_is_asked_for(command: str) -> None:
    from xsky.security.permissions import decide
    from xsky.security.roles import BUILTIN_ROLES

    d = decide("shell", {"command": command}, BUILTIN_ROLES["shell"])
    assert d.effect == "ask" and "runs the code given" in d.reason, d.reason


def test_rbash_c_is_a_shell_c() -> None:
    assert ["rm", "-rf", "x"] in [p.argv for p in split_command("rbash -c 'rm -rf x'")]
