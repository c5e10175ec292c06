"""A script the command itself made of its input or of a value: the input linked to a name
(`ln -s /dev/stdin f; … | python3 f`), or a file a redirection or tee writes, then run (sec13:
`printf %s "{{…}}" > f.sh; bash f.sh` and `| tee f.py | python3 f.py` ran the value as code past
deny shell(touch:*)). Judged by effect, in real bash; the leader's replayed decisions keep 0.12.3's
reading (patch shell-reading-round-13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

PY = "import os; os.system('touch ran')"
MADE = [
    ("ln -s /dev/stdin f; printf '%s' \"{{agent_1_result}}\" | python3 f", PY),
    ("ln -sf /proc/self/fd/0 f.py && printf '%s' \"{{agent_1_result}}\" | python3 f.py", PY),
    ("ln -s /dev/stdin f; printf '%s' \"{{agent_1_result}}\" | bash f", "touch ran"),
    ("cp -s /dev/stdin f; printf '%s' \"{{agent_1_result}}\" | bash f", "touch ran"),
    ("printf '%s' \"{{agent_1_result}}\" > f.sh; bash f.sh", "touch ran"),
    ("printf '%s' \"{{agent_1_result}}\" > ./f.py && python3 -B f.py", PY),
    ("printf '%s' \"{{agent_1_result}}\" | tee f.sh >/dev/null; sh f.sh", "touch ran"),
    # (the fix's own review: run as a program, written by dd, a link made of what bash expands)
    ("printf '%s' \"{{agent_1_result}}\" > f.sh; chmod +x f.sh; ./f.sh", "#!/bin/sh\ntouch ran"),
    ("printf '%s' \"{{agent_1_result}}\" | dd of=f.sh status=none; bash f.sh", "touch ran"),
    ("d=/dev; ln -s $d/stdin f; printf '%s' \"{{agent_1_result}}\" | bash f", "touch ran"),
    ("ln -s $(printf /dev/stdin) f; printf '%s' \"{{agent_1_result}}\" | bash f", "touch ran"),
]


def _arguments(template: str, result: str) -> dict[str, object]:
    return rendered(template, result)


@pytest.mark.parametrize(("template", "result"), MADE)
def test_the_value_runs(template: str, result: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    bash(command, values, tmp_path, timeout=20)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result"), MADE)
def test_it_is_asked_for(template: str, result: str, tmp_path: Path) -> None:
    arguments = _arguments(template, result)
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it: allowed (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


@pytest.mark.parametrize(
    "template",
    [
        "printf '%s' \"{{agent_1_result}}\" > out.txt; python3 tool.py out.txt",
        "printf '%s' \"{{agent_1_result}}\" | tee out.txt | python3 tool.py",
        "ln -s data/in.csv in.csv; printf '%s' \"{{agent_1_result}}\" | python3 tool.py",
        'python3 tool.py "{{agent_1_result}}" > report.md; cat report.md',
    ],
)
def test_a_file_written_and_read_as_data_is_allowed(template: str, tmp_path: Path) -> None:
    decision = decide("shell", _arguments(template, "x"), ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason
