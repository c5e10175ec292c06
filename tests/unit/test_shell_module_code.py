"""python -m timeit runs its arguments (the statement, -s's setup) as Python, and pdb -c its
commands, as python -c does (sec13: `python3 -m timeit "{{…}}"`, `-s "{{…}}"` and a plan's own
`python3 -m timeit "__import__('os').system('touch ran')"` ran touch past deny shell(touch:*)).
Judged by effect, in real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

CODE = "__import__('os').system('touch ran')"


@pytest.mark.parametrize(
    "template",
    [
        'python3 -m timeit -n1 "{{agent_1_result}}"',
        'python3 -m timeit -n1 -s "{{agent_1_result}}" pass',
        'python3 -m timeit -n1 -s pass "{{agent_1_result}}"',
        'python3 -Bm timeit -n1 "{{agent_1_result}}"',
        f'python3 -m timeit -n1 "{CODE}"',
    ],
)
def test_timeits_arguments_are_code(template: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": CODE}, {}, {})
    bash(command, values, tmp_path, timeout=30)
    assert (tmp_path / "ran").exists()
    arguments = {"command": command, "values": values}
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask" and "timeit" in decision.reason, decision.reason
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it: allowed (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


def test_pdbs_commands_are_code(tmp_path: Path) -> None:
    (tmp_path / "tool.py").write_text("pass\n")
    command, values = render_command(
        'python3 -m pdb -c "{{agent_1_result}}" -c q tool.py', {"1": CODE}, {}, {}
    )
    bash(command, values, tmp_path, timeout=30)
    assert (tmp_path / "ran").exists()
    decision = decide("shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "ask", decision.reason
