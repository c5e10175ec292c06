"""A prefix allow rule (`shell(sed:*)`, `shell(git grep:*)`) is no answer for a {{…}} value the
checker asks about: the value can make any call of the program (a fourth review: under such
rules `sed "s/a/{{…}}/" f.txt`, `awk "/{{…}}/"`, `tar -xf a.tar "{{…}}"`, `make "{{…}}"` and
`git grep -n "{{…}}" -- .` ran what a result said, unasked). An interpreter's prefix rule
allows code however it is given, as before; an exact rule is a person's word for that text."""

from __future__ import annotations

import pytest

from xsky.plan.variables import render_command
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.roles import BUILTIN_ROLES, RoleCapabilityModel

NO_SHELL = RoleCapabilityModel(name="reader", allowed_tools=["file_read"])


def _settings(rule: str) -> PermissionSettings:
    return PermissionSettings(layers=[PermissionLayer(scope="project", allow=[rule])])


@pytest.mark.parametrize("role", [NO_SHELL, BUILTIN_ROLES["shell"]], ids=["rule", "role+rule"])
@pytest.mark.parametrize(
    ("rule", "template"),
    [
        ("shell(sed:*)", 'sed -i "s/a/{{agent_1_result}}/" f.txt'),
        ("shell(awk:*)", 'awk "/{{agent_1_result}}/" f.txt'),
        ("shell(tar:*)", 'tar -xf a.tar "{{agent_1_result}}"'),
        ("shell(make:*)", 'make "{{agent_1_result}}"'),
        ("shell(find:*)", 'find "{{agent_1_result}}" -name "*.log"'),
        ("shell(git grep:*)", 'git grep -n "{{agent_1_result}}" -- .'),
        ("shell(timeout:*)", 'timeout 5 sed "s/a/{{agent_1_result}}/" f.txt'),
    ],
)
def test_a_prefix_rule_does_not_answer_for_a_value(
    rule: str, template: str, role: RoleCapabilityModel
) -> None:
    command, _ = render_command(template, {"1": "x"}, {}, {})
    decision = decide("shell", {"command": command}, role, _settings(rule), "/w")
    assert decision.effect != "allow", decision.reason


@pytest.mark.parametrize(
    ("rule", "template"),
    [
        ("shell(sed:*)", 'sed -i "s/a/b/" -- "{{agent_1_result}}"'),
        ("shell(grep:*)", 'grep -c "{{agent_1_result}}" f.txt'),
        ("shell(python3:*)", 'python3 "{{agent_1_result}}"'),
        ("shell(python3 tool.py:*)", 'python3 tool.py "{{agent_1_result}}"'),
        ("shell(=sed -i s/a/${XSKY_V1}/ f.txt)", 'sed -i "s/a/{{agent_1_result}}/" f.txt'),
    ],
)
def test_other_rules_allow_as_before(rule: str, template: str) -> None:
    command, _ = render_command(template, {"1": "x"}, {}, {})
    decision = decide("shell", {"command": command}, NO_SHELL, _settings(rule), "/w")
    assert decision.effect == "allow", decision.reason
