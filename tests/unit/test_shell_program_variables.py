"""GNU tar reads options from TAR_OPTIONS: `TAR_OPTIONS='--to-command=touch\\ ran' tar -xf
a.tar` ran touch past deny shell(touch:*) unasked — the checker, which asks for `tar
--to-command`, read tar's words and not its environment (sec12). Setting it is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

MAKE_ARCHIVE = "echo hi > a && tar cf a.tar a && rm a && "
OPTION = "--to-command=touch\\ ran"
SET = [
    "TAR_OPTIONS='--to-command=touch\\ ran' tar -xf a.tar",
    "env TAR_OPTIONS='--to-command=touch\\ ran' tar -xf a.tar",
    "export TAR_OPTIONS='--to-command=touch\\ ran'; tar -xf a.tar",
    'TAR_OPTIONS="{{agent_1_result}}" tar -xf a.tar',  # a plan giving tar a result's options
    # set by a builtin that names it, a loop or a default, then exported (review15)
    "printf -v TAR_OPTIONS %s '--to-command=touch\\ ran'; export TAR_OPTIONS; tar -xf a.tar",
    "read -r TAR_OPTIONS <<< '--to-command=touch\\ ran'; export TAR_OPTIONS; tar -xf a.tar",
    "set -a; for TAR_OPTIONS in '--to-command=touch\\ ran'; do tar -xf a.tar; done",
    'export TAR_OPTIONS; : "${TAR_OPTIONS:=--to-command=touch\\ ran}"; tar -xf a.tar',
]


@pytest.mark.parametrize("template", SET)
def test_tar_runs_what_the_variable_says(template: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": OPTION}, {}, {})
    bash(MAKE_ARCHIVE + command, values, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("template", SET)
def test_setting_it_is_asked_for(template: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": OPTION}, {}, {})
    arguments = {"command": command, "values": values}
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    assert "TAR_OPTIONS" in decision.reason


def test_reading_it_or_setting_another_is_allowed(tmp_path: Path) -> None:
    for command in ('echo "$TAR_OPTIONS"; tar -tf a.tar', "LC_ALL=C tar -tf a.tar"):
        decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
        assert decision.effect == "allow", decision.reason
