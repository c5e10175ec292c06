"""The file an interactive shell runs first — bash's --rcfile or --init-file, with -i, also
beside -c — is a script it runs (sec14: `printf %s "{{…}}" | bash --rcfile /dev/stdin -ic true`
and `printf %s "{{…}}" > rc; bash --rcfile rc -ic true` ran the value as commands past deny
shell(touch:*), allowed: -c's line was read, the file not). Judged by effect in real bash; the
leader's replay keeps 0.12.4's reading (patch shell-reading-round-14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

RAN = [
    'printf %s "{{agent_1_result}}" | bash --rcfile /dev/stdin -ic true',
    'printf %s "{{agent_1_result}}" | bash --init-file /dev/stdin -i -c true',
    'printf %s "{{agent_1_result}}" | bash --rcfile /proc/self/fd/0 -ic :',
    'printf %s "{{agent_1_result}}" > rc; bash --rcfile rc -ic true',
    'printf %s "{{agent_1_result}}" > rc && bash --init-file ./rc -i -c true',
]
ALLOWED = [
    'bash --rcfile /dev/null -ic "echo {{agent_1_result}}" _',  # (a value in -c's line: asked)
    'printf %s "{{agent_1_result}}" > out.txt; bash --rcfile ~/.bashrc -ic "wc -l out.txt"',
    'printf %s "{{agent_1_result}}" | bash --rcfile /dev/stdin -c true',  # (not interactive)
]


def _arguments(template: str) -> dict[str, object]:
    return rendered(template, "touch ran")


@pytest.mark.parametrize("template", RAN)
def test_the_value_runs_and_is_asked_for(template: str, tmp_path: Path) -> None:
    arguments = _arguments(template)
    bash(str(arguments["command"]), {"HOME": str(tmp_path), **arguments["values"]}, tmp_path)  # type: ignore[dict-item]
    assert (tmp_path / "ran").exists()
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    with read_as_of((0, 12, 4)):  # as 0.12.4 read it (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


def test_a_shell_that_is_not_interactive_reads_no_rcfile(tmp_path: Path) -> None:
    arguments = _arguments(ALLOWED[2])
    bash(str(arguments["command"]), {"HOME": str(tmp_path), **arguments["values"]}, tmp_path)  # type: ignore[dict-item]
    assert not (tmp_path / "ran").exists()
    assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


def test_other_rcfiles_stay_as_they_were() -> None:
    assert decide("shell", _arguments(ALLOWED[0]), ROLE, DENY_TOUCH, "/ws").effect == "ask"
    assert decide("shell", _arguments(ALLOWED[1]), ROLE, DENY_TOUCH, "/ws").effect == "allow"
    for command in ("bash --rcfile /dev/null -ic 'make test'", "bash -ic 'nvm use 20'"):
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "allow"
