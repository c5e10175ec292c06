"""A {{…}} value that may begin an option, given to a program the checker's table does not know,
is asked for (sec11): only programs the table knows to have options that run programs or write
files were asked about, so `python3 -m pytest -q test_x.py "{{…}}"` imported the module a value
'-pevilplug' named (running its code past deny shell(touch:*)) unasked for a role holding shell.
After --, or a value that cannot begin an option (a file name), is data. The premise is checked
with real bash."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

PYTEST = f'{sys.executable} -m pytest -q test_x.py "{{{{agent_1_result}}}}"'
SETUP = (
    "printf 'def test_a():\\n    pass\\n' > test_x.py && "
    "printf 'import os\\nos.system(\"touch ran\")\\n' > evilplug.py"
)


def _decided(template: str, value: str, where: Path) -> str:
    command, values = render_command(template, {"1": value}, {}, {})
    decision = decide("shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(where))
    return f"{decision.effect}: {decision.reason}"


def test_the_value_is_a_pytest_option(tmp_path: Path) -> None:
    command, values = render_command(PYTEST, {"1": "-pevilplug"}, {}, {})
    bash(SETUP, {}, tmp_path)
    bash(command, {**values, "HOME": str(tmp_path), "PYTHONPATH": str(tmp_path)}, tmp_path)
    assert (tmp_path / "ran").exists()


def test_a_value_that_may_begin_an_option_of_an_unknown_program_is_asked_for(
    tmp_path: Path,
) -> None:
    said = _decided(PYTEST, "-pevilplug", tmp_path)
    assert said.startswith("ask"), said
    assert "does not know" in said
    said = _decided('ffprobe "{{agent_1_result}}"', "--some-option", tmp_path)
    assert said.startswith("ask"), said


def test_a_file_name_or_a_value_after_dashes_is_not(tmp_path: Path) -> None:
    assert _decided(PYTEST, "tests/test_y.py", tmp_path).startswith("allow")
    after = PYTEST.replace('test_x.py "', 'test_x.py -- "')
    assert _decided(after, "-pevilplug", tmp_path).startswith("allow")
    # a variable of the command's own is no plan's value
    said = _decided('sleep 1 & ffprobe "{{agent_1_result}}"; kill $!', "a.mp4", tmp_path)
    assert said.startswith("allow"), said
