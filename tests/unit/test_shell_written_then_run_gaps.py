"""Files written then run, by name (round 14), past three spellings round 14 did not read
(review18: each ran a {{…}} value in bash past deny shell(touch:*), allowed): a brace
expansion naming the file (`bash {f,g}.sh`), find's -exec running what it found (`-exec bash
{} \\;`, `-exec {} \\;`), and a writer naming its output by an option or a second operand
(`sort f.txt -o f.sh`, `uniq f.txt f.sh`). The leader's replay keeps 0.12.4's reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, rendered, run_rendered
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

V = 'printf %s "{{agent_1_result}}"'
RAN = [
    f"{V} > f.sh; bash {{f,g}}.sh",
    f"{V} > f.sh; bash f{{,x}}.sh",
    f"{V} > f.sh; find . -name f.sh -exec bash {{}} \\;",
    f"{V} > f.sh; chmod +x f.sh; find . -name f.sh -exec {{}} \\;",
    f"{V} > f.txt; sort f.txt -o f.sh; bash f.sh",
    f"{V} > f.txt; sort --output=f.sh f.txt; bash f.sh",
    f"{V} > f.txt; uniq f.txt f.sh; bash f.sh",
]
ALLOWED = [
    f"{V} > notes.md; find . -name '*.sh' -exec shellcheck {{}} +",
    f"{V} > notes.md; sort data.txt -o sorted.txt; python3 report.py sorted.txt",
    f"{V} > notes.md; ls {{src,tests}}/",
]


def _arguments(template: str) -> dict[str, object]:
    return rendered(template, "#!/bin/sh\ntouch ran\n")


@pytest.mark.parametrize("template", RAN)
def test_the_value_runs_in_bash(template: str, tmp_path: Path) -> None:
    arguments = _arguments(template)
    run_rendered(arguments, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("template", RAN)
def test_it_is_asked_for(template: str) -> None:
    arguments = _arguments(template)
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "ask", decision.reason
    with read_as_of((0, 12, 4)):  # as 0.12.4 read it (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"


@pytest.mark.parametrize("template", ALLOWED)
def test_other_programs_stay_allowed(template: str) -> None:
    decision = decide("shell", _arguments(template), ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "allow", decision.reason
