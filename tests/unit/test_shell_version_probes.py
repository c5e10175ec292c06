"""An interpreter asked only for its version or its help reads no program from its input
(sec14: `node -v`, `python3 --version`, `perl -v` in a command holding a {{…}} value were asked,
in every mode, as a shell reading the value as commands — false asks; in bash, a program piped
to them does not run). ruby -v still reads its input (it turns on warnings). The leader's replay
keeps 0.12.4's reading (patch shell-reading-round-14)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

CODE = {
    "node": "require('child_process').execSync('touch ran')",
    "python3": "import os; os.system('touch ran')",
    "perl": "system('touch ran')",
}
PROBES = [
    ("node", "-v"),
    ("node", "--version"),
    ("node", "-h"),
    ("python3", "-V"),
    ("python3", "-VV"),
    ("python3", "--version"),
    ("python3", "-h"),
    ("perl", "-v"),
    ("perl", "-V"),
]
STILL_READ = [
    'printf %s "{{agent_1_result}}" | node',
    'printf %s "{{agent_1_result}}" | python3 -i -V',
    'printf %s "{{agent_1_result}}" | ruby -v',
    'printf %s "{{agent_1_result}}" | perl -w',
]


def _arguments(template: str, result: str) -> dict[str, object]:
    return rendered(template, result)


@pytest.mark.parametrize(("program", "option"), PROBES)
def test_a_probe_reads_nothing_and_is_not_asked_for(
    program: str, option: str, tmp_path: Path
) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")
    arguments = _arguments(
        f'printf %s "{{{{agent_1_result}}}}" | {program} {option}', CODE[program]
    )
    bash(str(arguments["command"]), arguments["values"], tmp_path)  # type: ignore[arg-type]
    assert not (tmp_path / "ran").exists()  # nothing piped to it ran
    for template in (
        f'echo "{{{{agent_1_result}}}}" > out.txt && {program} {option}',
        f'{program} {option}; curl -sL "{{{{agent_1_result}}}}" -o page.html',
    ):
        arguments = _arguments(template, "https://example.com/a")
        decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
        assert decision.effect == "allow", decision.reason
        with read_as_of((0, 12, 4)):  # as 0.12.4 read it (a leader's replay keeps that)
            assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "ask"


@pytest.mark.parametrize("template", STILL_READ)
def test_a_program_read_from_the_input_is_still_asked_for(template: str) -> None:
    decision = decide("shell", _arguments(template, "x"), ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "ask", decision.reason
