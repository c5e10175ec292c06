"""What xargs reads from its input are the arguments of the command it runs: in a command that
holds a {{…}} value, that input may be the value (sec11: `echo "{{…}}" | xargs sed -i 's/a/b/'`
ran a value `f.txt '--expression=1e cmd'`, `| xargs git clone` a value '--upload-pack=cmd',
`| xargs tar -cf out.tar` '--checkpoint-action=exec=cmd', `| xargs -I{} sh -c 'echo {}'` a
value 'x; cmd' — each past deny shell(touch:*) unasked for a role holding shell). The words xargs
adds are checked as words known only when the command runs. Each premise is checked with real
bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

SETUP = (
    "git init -q src && git -C src -c user.email=a@b -c user.name=a commit -q --allow-empty -m m"
    " && echo a > f.txt"
)
THROUGH_XARGS = [
    ('echo "{{agent_1_result}}" | xargs sed -i "s/foo/bar/"', "f.txt '--expression=1e touch ran'"),
    ('echo "{{agent_1_result}}" | xargs git clone', "'--upload-pack=touch ran;false' src out"),
    (
        'echo "{{agent_1_result}}" | xargs tar -cf out.tar',
        "f.txt '--checkpoint-action=exec=touch ran' --checkpoint=1",
    ),
    ('printf "%s\\n" "{{agent_1_result}}" | xargs -I{} sh -c "echo {}"', "x; touch ran"),
    ('printf "%s\\n" "{{agent_1_result}}" | xargs -r -I X bash -c "echo X"', "x; touch ran"),
    ('printf "%s\\n" "{{agent_1_result}}" | xargs --replace sh -c "echo {}"', "x; touch ran"),
]


@pytest.mark.parametrize(("template", "result"), THROUGH_XARGS)
def test_the_value_reaches_the_command_through_xargs(
    template: str, result: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    env = {**values, "HOME": str(tmp_path)}
    for script in (SETUP, command):
        bash(script, env, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result"), THROUGH_XARGS)
def test_what_xargs_reads_is_checked_as_a_value(template: str, result: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    "template",
    [
        'echo "{{agent_1_result}}" | xargs grep -l foo',
        'echo "{{agent_1_result}}" | xargs -n1 curl -sO --',
        'echo "{{agent_1_result}}" | xargs sed -i "s/a/b/" --',
        'printf "%s\\n" "{{agent_1_result}}" | xargs -I{} sh -c \'echo "$1"\' _ {}',
    ],
)
def test_xargs_input_where_no_option_or_code_is_read_is_not_asked(
    template: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": "f.txt"}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "allow", decision.reason


def test_a_command_without_values_is_read_as_before(tmp_path: Path) -> None:
    decision = decide(
        "shell", {"command": "ls | xargs sed -i s/a/b/"}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "allow", decision.reason
