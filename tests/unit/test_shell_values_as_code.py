"""A {{…}} value in a command line a shell reads again — `bash -c "…"`, `eval`, `trap`,
`compgen -C`, `flock -c`, a shell's input — is code (a fourth review: each ran a result's
`x; cmd` unasked, where docs/permissions.md says the checker asks). Passed as an argument
(`sh -c '… "$1"' _ "{{…}}"`) it is data. Each premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

RESULT = "hi; touch ran"
READ_AS_CODE = [
    'eval echo "{{agent_1_result}}"',
    'bash -c "echo {{agent_1_result}}"',
    "sh -c 'echo {{agent_1_result}}'",
    'timeout 9 sh -c "echo {{agent_1_result}}"',
    'find . -maxdepth 0 -exec sh -c "echo {{agent_1_result}}" \\;',
    'trap "echo {{agent_1_result}}" EXIT',
    'compgen -C "echo {{agent_1_result}}" x',
    'X="{{agent_1_result}}"; bash -c "echo $X"',
    'printf "%s" "{{agent_1_result}}" | sh',
    'bash <<< "echo {{agent_1_result}}"',
]


@pytest.mark.parametrize("template", READ_AS_CODE)
def test_bash_reads_the_value_as_code(template: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": RESULT}, {}, {})
    bash(command, values, tmp_path, timeout=10)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("template", READ_AS_CODE)
def test_the_checker_asks(template: str) -> None:
    command, _ = render_command(template, {"1": RESULT}, {}, {})
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/w")
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    "template",
    [
        'sh -c \'echo "$1"\' _ "{{agent_1_result}}"',
        "echo '{{agent_1_result}}'",
        'bash -c "cd $PWD && ls"',  # no value in the command: as before
        "printf '%s\\n' '{{agent_1_result}}' | wc -c",
    ],
)
def test_a_value_given_as_data_is_allowed(template: str) -> None:
    command, _ = render_command(template, {"1": RESULT}, {}, {})
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/w")
    assert decision.effect == "allow", decision.reason
