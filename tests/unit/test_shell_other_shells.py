"""Shells no table knew, here-strings given to a shell or an interpreter, and programs that read
commands from their input which run shell commands (sec14, each judged in real bash: `fish -c
'touch ran'`, `tcsh -c …`, `csh -c …`, `busybox ash -c …`, `bash <<< 'touch ran'`, `python3 <<<
"…os.system('touch ran')"`, `m4 <<< 'syscmd(touch ran)'` ran touch past deny shell(touch:*),
allowed; a value piped to fish, tcsh, busybox ash, m4 or gnuplot, or given to m4 -D, ran as
commands). The leader's replay keeps 0.12.4's reading (patch shell-reading-round-14)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

# (command or template, the value, the program it needs; the expected decision)
CASES = [
    ("fish -c 'touch ran'", None, "fish", "deny"),
    ("fish --command='touch ran'", None, "fish", "deny"),
    ("fish --comm 'touch ran'", None, "fish", "deny"),
    ("fish -C 'touch ran' -c true", None, "fish", "deny"),
    ("fish --init-command 'touch ran' -c true", None, "fish", "deny"),
    ("tcsh -c 'touch ran'", None, "tcsh", "deny"),
    ("csh -c 'touch ran'", None, "csh", "deny"),
    ("busybox ash -c 'touch ran'", None, "busybox", "deny"),
    ("bash <<< 'touch ran'", None, "bash", "deny"),
    ("python3 <<< \"import os; os.system('touch ran')\"", None, "python3", "ask"),
    ("m4 <<< 'syscmd(touch ran)'", None, "m4", "ask"),
    ('printf %s "{{agent_1_result}}" | fish', "touch ran", "fish", "ask"),
    ('printf %s "{{agent_1_result}}" | tcsh', "touch ran", "tcsh", "ask"),
    ('printf %s "{{agent_1_result}}" | busybox ash', "touch ran", "busybox", "ask"),
    ('printf %s "{{agent_1_result}}" | m4', "syscmd(touch ran)", "m4", "ask"),
    ('printf %s "{{agent_1_result}}" | gnuplot', 'system "touch ran"', "gnuplot", "ask"),
    ("m4 -D X=\"{{agent_1_result}}\" <<< 'X'", "syscmd(touch ran)", "m4", "ask"),
]
ALLOWED = [
    "fish -c 'ls -la'",
    "bash <<< 'ls -la'",
    "tcsh -c 'echo hi'",
    "python3 tool.py <<< 'some input'",
    "m4 config.m4 > config.h",
    'printf %s "{{agent_1_result}}" | wc -c',
]


def _arguments(template: str, result: str | None) -> dict[str, object]:
    if result is None:
        return {"command": template}
    return rendered(template, result)


@pytest.mark.parametrize(("template", "result", "needs", "effect"), CASES)
def test_it_runs_and_is_decided(
    template: str, result: str | None, needs: str, effect: str, tmp_path: Path
) -> None:
    arguments = _arguments(template, result)
    if shutil.which(needs) is not None:
        env = {
            "HOME": str(tmp_path),
            "PATH": f"{Path(shutil.which(needs) or '').parent}:/usr/bin:/bin",
        }
        bash(str(arguments["command"]), {**env, **arguments.get("values", {})}, tmp_path)  # type: ignore[dict-item]
        assert (tmp_path / "ran").exists()
    assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == effect
    with read_as_of((0, 12, 4)):  # as 0.12.4 read it (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


@pytest.mark.parametrize("template", ALLOWED)
def test_ordinary_calls_stay_allowed(template: str) -> None:
    arguments = _arguments(template, "text" if "{{" in template else None)
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"
