"""A shell runs its startup files from its home folder — the workspace, where the sandbox sets
HOME (activities/sandbox/confine.py), or a folder `HOME=…` names: a {{…}} value the same
command wrote to .bashrc, .bash_profile or .profile ran in bash past deny shell(touch:*),
allowed, under `bash -ic`/`bash -lc`/`sh -l -c` (review18; round 14 read --rcfile's file only).
They are files the command wrote and runs, by name, as 0.12.5 reads the others (the leader's
replay keeps 0.12.4's reading, patch shell-reading-round-14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, rendered, run_rendered
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

V = 'printf %s "{{agent_1_result}}"'
RAN = [
    f"{V} > .bashrc; bash -ic true",
    f'{V} > .bashrc && bash -i -c "echo hi"',
    f"{V} > .bashrc; HOME=. bash -ic true",
    f"{V} > a.txt; cp a.txt .bashrc; bash -ic true",
    f"{V} > .bash_profile; bash -lc true",
    f"{V} > .profile; bash --login -c true",
    f"{V} > .profile; sh -l -c true",
]
ALLOWED = [
    f"{V} > notes.md; bash -ic true",
    f"{V} > .bashrc; bash -c true",  # (not interactive: no .bashrc read)
    f"{V} > .profile; bash -ic true",
]


def _arguments(template: str) -> dict[str, object]:
    return rendered(template, "touch ran")


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
def test_other_files_stay_allowed(template: str, tmp_path: Path) -> None:
    arguments = _arguments(template)
    run_rendered(arguments, tmp_path)
    assert not (tmp_path / "ran").exists()
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"
