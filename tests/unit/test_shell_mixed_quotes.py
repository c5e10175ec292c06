"""bashlex 0.18 misreads a word that opens with '…' and goes on with "…$X…": it keeps the
inner quotes as text and drops the expansion. That is the form a {{…}} reference inside '…'
renders to, so `sed 's/a/{{…}}/' f.txt` (the usual way to write a sed script) ran a result's
`x/⏎1e cmd` unasked, and `echo 'a'"$(cmd)"'b'` ran cmd past every rule (a fourth review). The
checker reads such words itself. Each premise is checked with real bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import split_command

# (a plan's command, agent 1's result): single-quoted references
SINGLE_QUOTED = [
    ("echo hello > f.txt; sed -i 's/hello/{{agent_1_result}}/' f.txt", "x/\n1e touch ran\n#"),
    ("echo hello > f.txt; awk '/{{agent_1_result}}/' f.txt", 'x/ || system("touch ran") || /y'),
    ("sh -c 'echo {{agent_1_result}}'", "hi; touch ran"),
]
# commands with no value at all
HIDDEN = ["echo 'a'\"$(touch ran)\"'b'", "echo 'a'\"`touch ran`\"'b'", "'t'\"ouch$U\"'' ran"]


@pytest.mark.parametrize(("template", "result"), SINGLE_QUOTED)
def test_a_single_quoted_value_runs_there(template: str, result: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    bash(command, values, tmp_path, timeout=10)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result"), SINGLE_QUOTED)
def test_a_single_quoted_value_is_asked_for(template: str, result: str) -> None:
    command, _ = render_command(template, {"1": result}, {}, {})
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/w")
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize("command", HIDDEN)
def test_bash_runs_what_the_word_hides(command: str, tmp_path: Path) -> None:
    bash(command, {}, tmp_path, timeout=10)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", HIDDEN)
def test_the_checker_does_not_allow_it(command: str) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/w")
    assert decision.effect != "allow", decision.reason


def test_the_word_is_read_as_bash_reads_it() -> None:
    (part,) = split_command("sed -i 's/hello/'\"${XSKY_V1}\"'/' f.txt")
    assert part.argv == ["sed", "-i", "s/hello/${XSKY_V1}/", "f.txt"]
    assert part.expansions == {2: "runtime"}
    (part,) = split_command("grep 'a'\"b\" 'it'\"'\"'s' f.txt")
    assert part.argv == ["grep", "ab", "it's", "f.txt"]
