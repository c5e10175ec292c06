"""ssh, scp and sftp run a local program named in their options (ProxyCommand, LocalCommand,
a config file, scp's -S), and `git grep -O` opens the files it finds with the program it names:
issued as a model's own call, each ran touch past deny shell(touch:*) for a role holding shell
— a value in that place was asked for, the call itself was not (sec11). Each premise is run in
real bash (ssh stops at the proxy: no connection is made)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide

RUNS = [
    'ssh -oProxyCommand="touch ran" -oBatchMode=yes x true',
    'ssh -o "ProxyCommand touch ran" -o BatchMode=yes x',
    'scp -oProxyCommand="touch ran" -oBatchMode=yes x:f .',
    'sftp -oProxyCommand="touch ran" -oBatchMode=yes x',
    "git init -q . && echo a > a && git add a && git grep -O'touch ran' a",
    # (review14: a cluster, a unique prefix, sftp's server program)
    "git init -q . && echo a > a && git add a && git grep -nO'touch ran' a",
    "git init -q . && echo a > a && git add a && git grep --open='touch ran' a",
    'sftp -D "/usr/bin/touch ran"',
]


@pytest.mark.parametrize("command", RUNS)
def test_the_option_runs_the_program(command: str, tmp_path: Path) -> None:
    bash(command, {"HOME": str(tmp_path), "GIT_PAGER": "cat"}, tmp_path, timeout=10)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", RUNS)
def test_such_a_call_is_asked_for(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "scp -P 2222 a.txt x:b",
        "sftp -o StrictHostKeyChecking=no -b batch x",
        "git grep -n foo",
        "git grep -e -O a",
        "git grep -- -O a",
    ],
)
def test_ordinary_calls_are_not(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason


# sec12: under a prefix rule allowing the program (`shell(ssh:*)`), ssh's and sftp's options
# that run a local program ran it unasked: ssh "runs programs" however it is called, so the
# rule's own words were taken to vouch for it (scp, whose table reads -S/-F, was asked).
UNDER_A_RULE = [(c, f"shell({c.split()[0]}:*)") for c in RUNS if c.startswith(("ssh", "sftp"))]
# ssh reads options after the destination too, up to the remote command
UNDER_A_RULE += [
    ("ssh -o BatchMode=yes x -oProxyCommand='touch ran' true", "shell(ssh:*)"),
    ("ssh x -F cfg true", "shell(ssh:*)"),
]


@pytest.mark.parametrize(("command", "rule"), UNDER_A_RULE)
def test_a_rule_allowing_the_program_does_not_allow_the_program_it_runs(
    command: str, rule: str, tmp_path: Path
) -> None:
    settings = PermissionSettings(
        layers=[PermissionLayer(scope="user", path="s.json", deny=["shell(touch:*)"], allow=[rule])]
    )
    decision = decide("shell", {"command": command}, ROLE, settings, str(tmp_path))
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("ssh -o BatchMode=yes x uptime", "shell(ssh:*)"),
        ("sftp -b batch x", "shell(sftp:*)"),
        ("ssh -p 2222 -i key x true", "shell(ssh:*)"),
        # the remote command's own options are not ssh's (review15: `ls -F` was read as -F)
        ("ssh x ls -F /tmp", "shell(ssh:*)"),
        ("ssh -p 2222 x grep -o pattern file", "shell(ssh:*)"),
    ],
)
def test_the_rule_still_allows_what_it_names(command: str, rule: str, tmp_path: Path) -> None:
    settings = PermissionSettings(
        layers=[PermissionLayer(scope="user", path="s.json", deny=["shell(touch:*)"], allow=[rule])]
    )
    decision = decide("shell", {"command": command}, ROLE, settings, str(tmp_path))
    assert decision.effect == "allow", decision.reason
