"""watch joins its words into one command line that sh -c reads: a {{…}} value among them is
code there (sec11: `watch -g echo "{{…}}"` ran a value 'x; touch ran' past deny
shell(touch:*) unasked for a role holding shell). The premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

TEMPLATE = 'TERM=dumb timeout 3 watch -n 1 -g echo "{{agent_1_result}}"'


def test_watch_runs_the_value_as_code(tmp_path: Path) -> None:
    command, values = render_command(TEMPLATE, {"1": "x; touch ran"}, {}, {})
    bash(command, values, tmp_path)
    assert (tmp_path / "ran").exists()


def test_a_value_in_watch_s_command_line_is_asked_for(tmp_path: Path) -> None:
    command, values = render_command(TEMPLATE, {"1": "x; touch ran"}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason
    assert "watch joins its words" in decision.reason


def test_watch_exec_with_a_value_is_not(tmp_path: Path) -> None:
    command, values = render_command(
        'watch -x -n 1 echo "{{agent_1_result}}"', {"1": "x; touch ran"}, {}, {}
    )
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert "watch joins its words" not in decision.reason
