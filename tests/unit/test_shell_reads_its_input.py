"""A shell (or an interpreter) reading its commands from its input, in a command that holds a
{{…}} value, is asked for however it is called (sec11): the check for `printf %s "{{…}}" | sh`
took any word after the shell for its script, so `sh -s x`, `bash -o posix`, `bash -O extglob`,
`bash --rcfile f`, `bash /dev/stdin`, `bash <(printf … "{{…}}")` — and `python3`, `perl`, which
it never looked at — ran a value as commands, past deny shell(touch:*) unasked for a role
holding shell. Each premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

SHELL = "touch ran"
PYTHON = "import os; os.system('touch ran')"
FED = [
    ('printf "%s\\n" "{{agent_1_result}}" | sh -s x', SHELL),
    ('printf "%s\\n" "{{agent_1_result}}" | bash -s -- x', SHELL),
    ('bash -s x <<< "{{agent_1_result}}"', SHELL),
    ('printf "%s\\n" "{{agent_1_result}}" | bash /dev/stdin', SHELL),
    ('printf "%s\\n" "{{agent_1_result}}" | sh -o errexit', SHELL),
    ('printf "%s\\n" "{{agent_1_result}}" | bash -O extglob', SHELL),
    ('printf "%s\\n" "{{agent_1_result}}" | bash +O extglob', SHELL),
    ('printf "%s\\n" "{{agent_1_result}}" | bash --rcfile /dev/null', SHELL),
    ('bash <(printf "%s\\n" "{{agent_1_result}}")', SHELL),
    ('printf "%s\\n" "{{agent_1_result}}" | python3', PYTHON),
    ('printf "%s\\n" "{{agent_1_result}}" | python3 -', PYTHON),
    ('printf "%s\\n" "{{agent_1_result}}" | perl', "system('touch ran')"),
]


@pytest.mark.parametrize(("template", "result"), FED)
def test_the_value_runs_as_commands(template: str, result: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    bash(command, {**values, "HOME": str(tmp_path)}, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result"), FED)
def test_a_shell_reading_a_value_is_asked_for(template: str, result: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason
    assert "reads its commands from its input" in decision.reason


@pytest.mark.parametrize(
    "template",
    [
        'bash -o pipefail script.sh "{{agent_1_result}}"',
        'bash --rcfile /dev/null script.sh "{{agent_1_result}}"',
        'sh -c \'echo "$1"\' _ "{{agent_1_result}}"',
        'python3 -W ignore tool.py "{{agent_1_result}}"',
        'python3 -m json.tool <<< "{{agent_1_result}}"',
    ],
)
def test_a_script_given_the_value_as_an_argument_is_not(template: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": "notes.txt"}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert "reads its commands from its input" not in decision.reason, decision.reason


def test_a_command_line_after_rcfile_is_checked(tmp_path: Path) -> None:
    # sec11: --rcfile/--init-file's value was taken for a script, and `-c`'s line never read
    for command in (
        'bash --rcfile /dev/null -c "touch ran"',
        'bash --init-file /dev/null -c "touch ran"',
    ):
        bash(command, {"HOME": str(tmp_path)}, tmp_path)
        assert (tmp_path / "ran").exists()
        (tmp_path / "ran").unlink()
        decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
        assert decision.effect == "deny", decision.reason
    command, values = render_command(
        'bash --rcfile /dev/null -c "echo {{agent_1_result}}"', {"1": "x; touch ran"}, {}, {}
    )
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        'bash -eo pipefail -c "touch ran"',
        'bash -euo pipefail -c "touch ran"',
        'bash -co pipefail "touch ran"',
        'bash -cO extglob "touch ran"',
    ],
)
def test_a_command_line_after_a_cluster_with_o_is_checked(command: str, tmp_path: Path) -> None:
    # sec11: only -o/-O alone took the next word; in a cluster (`-euo pipefail`, the common
    # idiom) the value was taken for a script, and `-c`'s line never read
    bash(command, {"HOME": str(tmp_path)}, tmp_path)
    assert (tmp_path / "ran").exists()
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "deny", decision.reason


def test_a_value_under_bash_euo_pipefail_c_is_asked_for(tmp_path: Path) -> None:
    command, values = render_command(
        'bash -euo pipefail -c "echo {{agent_1_result}}"', {"1": "x; touch ran"}, {}, {}
    )
    bash(command, values, tmp_path)
    assert (tmp_path / "ran").exists()
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason
