"""A word holding ANSI-C quoting ($'…') is read as bash reads it (sec11): such a word was read
as bashlex reads it, which misses the "${XSKY_V1}" a {{…}} value inside '…' is rendered to, so
`sed 's/{{…}}/'$'\\t''/g'` (a tab in the replacement) had no value check at all and ran a value's
`1e cmd`, and `bash -c 'echo {{…}}'$''` ran 'x; cmd' — past deny shell(touch:*) unasked for a
role holding shell. Each premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

MIXED = [
    ("sed 's/{{agent_1_result}}/'$'\\t''/g' f.txt", "a/b/\n1e touch ran\n#"),
    ("sed 's/a/{{agent_1_result}}/'$'\\n''p' f.txt", "x/\n1e touch ran\n#"),
    ("bash -c 'echo {{agent_1_result}}'$''", "x; touch ran"),
]


@pytest.mark.parametrize(("template", "result"), MIXED)
def test_the_value_runs(template: str, result: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    bash("echo a > f.txt", {}, tmp_path)
    bash(command, values, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result"), MIXED)
def test_a_value_beside_ansi_c_quoting_is_checked(
    template: str, result: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    ("command", "effect"),
    [
        ("sed $'s/a/b/\\n1e touch ran' f.txt", "ask"),  # the newline is bash's: sed's e command
        ("sed $'1e touch ran' f.txt", "ask"),
        ("touch $'ra'n", "deny"),
        ("echo $'a\\tb' $'it\\'s'", "allow"),
        ("grep $'\\t' f.txt", "allow"),
    ],
)
def test_ansi_c_words_are_decoded(command: str, effect: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == effect, decision.reason
