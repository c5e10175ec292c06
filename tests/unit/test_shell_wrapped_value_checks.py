"""A {{…}} value's checks (sed's script, awk's program, tar's options, make, find, an
interpreter's script place) hold for the command a wrapper runs too (a fourth review:
`timeout 5 sed "s/a/{{…}}/"`, `nice tar -xf a.tar "{{…}}"`, `xargs sed …`, `setsid python3
"{{…}}"` were allowed unasked — the wrapped command's words lost which were values). Each
premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import bash
from xsky.security.permissions import decide
from xsky.security.roles import RoleCapabilityModel

SED_E = 'x/\n1e touch "$W/ran"\ns/x/y'
# (command, the value, a setup command): each runs what the value says
WRAPPED = [
    ('timeout 5 sed "s/a/${XSKY_V1}/" f.txt', SED_E, "echo a > f.txt"),
    ('env LANG=C sed "s/a/${XSKY_V1}/" f.txt', SED_E, "echo a > f.txt"),
    ('echo f.txt | xargs sed "s/a/${XSKY_V1}/"', SED_E, "echo a > f.txt"),
    ('stdbuf -oL awk "/${XSKY_V1}/" f.txt', 'x/ || system("touch $W/ran") || /y', "echo a > f.txt"),
    ('nohup tar -xf a.tar "${XSKY_V1}"', '--to-command=touch "$W/ran"', "echo a>f.txt; tar -cf a.tar f.txt"),
    ('setsid -w python3 "${XSKY_V1}"', "-copen('ran','w')", ""),
    ('ionice -c3 find . "${XSKY_V1}" ran', "-fprint", ""),
    ('timeout 9 make "${XSKY_V1}"', "--eval=x:=$(shell touch ran)", ""),
]  # fmt: skip
ROLE = RoleCapabilityModel(name="coder", allowed_tools=["shell"])


@pytest.mark.parametrize(("command", "value", "setup"), WRAPPED)
def test_bash_runs_what_the_value_says(
    command: str, value: str, setup: str, tmp_path: Path
) -> None:
    env = {"XSKY_V1": value, "W": str(tmp_path), "HOME": str(tmp_path)}
    for script in (setup, command):
        bash(script, env, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("command", "value", "setup"), WRAPPED)
def test_the_checker_asks_as_for_the_unwrapped_command(
    command: str, value: str, setup: str
) -> None:
    d = decide("shell", {"command": command}, ROLE, workspace="/w")
    assert d.effect == "ask", d.reason
    assert "value known only when it runs" in d.reason


@pytest.mark.parametrize(
    "command",
    [
        'timeout 5 grep -c "${XSKY_V1}" f.txt',
        'echo a | xargs -n1 echo "${XSKY_V1}"',
        'nice sed "s/a/b/" -- "${XSKY_V1}"',
        'timeout 5 tar -xf "${XSKY_V1}" -C out',
    ],
)
def test_a_value_given_as_data_to_a_wrapped_command_is_allowed(command: str) -> None:
    assert decide("shell", {"command": command}, ROLE, workspace="/w").effect == "allow"
