"""A {{…}} value inside sed's script, awk's program or where tar reads options is code the
checker never read (a third review: `sed -i "s/hello/{{agent_1_result}}/" f.txt` with a result
'x/<newline>1e rm …' ran rm a deny rule refused; `awk "/{{…}}/"` ran system(); `tar -xf a.tar
"{{…}}"` ran --to-command). Such a command is asked for; a value given as data is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.roles import BUILTIN_ROLES

ROLE = BUILTIN_ROLES["shell"]  # holds shell: a command no rule stops is allowed

# (the plan's command, agent 1's result)
CODE_IN_A_VALUE = [
    ('echo hello > f.txt; sed -i "s/hello/{{agent_1_result}}/" f.txt', "x/\n1e touch ran\n#"),
    ('echo hello > f.txt; sed -e "s/hello/{{agent_1_result}}/" f.txt', "x/w ran\n#"),
    ('echo hello > f.txt; awk "/{{agent_1_result}}/" f.txt', 'x/ || system("touch ran") || /y'),
    # the script given joined to its option (the fix's own review)
    (
        'echo hello > f.txt; sed --expression="s/hello/{{agent_1_result}}/" f.txt',
        "x/\n1e touch ran\n#",
    ),
    ('echo hello > f.txt; sed -e"s/hello/{{agent_1_result}}/" f.txt', "x/\n1e touch ran\n#"),
    ('echo a > a; tar cf a.tar a; tar -xf a.tar "{{agent_1_result}}"', "--to-command=touch ran"),
    # a value read as an option or a variable (the fix's own review)
    ('make "{{agent_1_result}}"', "--eval=$(shell touch ran)"),
    ('python3 "{{agent_1_result}}"', "-cimport os; os.system('touch ran')"),
    (
        'echo k > keep; find "{{agent_1_result}}" -name "*.log"; test -e keep || echo y > ran',
        "-delete",
    ),
]


@pytest.mark.parametrize(("template", "result"), CODE_IN_A_VALUE)
def test_a_value_runs_a_program_there(template: str, result: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    bash(command, values, tmp_path, timeout=10)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result"), CODE_IN_A_VALUE)
def test_a_command_with_a_value_there_is_asked_for(
    template: str, result: str, tmp_path: Path
) -> None:
    command, _ = render_command(template, {"1": result}, {}, {})
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    assert "known only when it runs" in decision.reason


@pytest.mark.parametrize(
    "template",
    [
        # the file is a value, the script is not (after --: GNU sed reads options anywhere)
        "sed -i 's/hello/world/' -- \"{{agent_1_result}}\"",
        "awk -v k=\"{{agent_1_result}}\" '{print k, $1}' f.txt",
        "awk '{print $2}' \"{{agent_1_result}}\"",
        'tar -xf a.tar -- "{{agent_1_result}}"',
        'tar -xf "{{agent_1_result}}"',  # the archive's name: -f's value, never an option
        'tar -C "{{agent_1_result}}" -xf a.tar',
        'grep -c "{{agent_1_result}}" f.txt',
        'find . -name "{{agent_1_result}}" -type f',
        'python3 tool.py "{{agent_1_result}}"',
    ],
)
def test_a_value_given_as_data_is_allowed_as_before(template: str, tmp_path: Path) -> None:
    command, _ = render_command(template, {"1": "x"}, {}, {})
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason
