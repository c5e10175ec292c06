"""A value that names the program a package or environment tool runs (`npx "{{…}}" ran`,
`poetry run "{{…}}"`, `mise exec -- "{{…}}"`, `nix shell p -c "{{…}}"` …) is asked for, as a value
written first is (sec13: `npx "{{…}}" ran` with a value 'touch' ran touch past deny
shell(touch:*)). The worker's gate; the leader's replay keeps 0.12.3's reading."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of


def _arguments(template: str, result: str) -> dict[str, object]:
    return rendered(template, result)


def test_npx_runs_the_program_a_value_names(tmp_path: Path) -> None:
    if shutil.which("npx") is None:
        pytest.skip("npx is not installed")
    command, values = render_command('npx "{{agent_1_result}}" ran', {"1": "touch"}, {}, {})
    bash(command, {**values, "HOME": str(tmp_path)}, tmp_path, timeout=60)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "template",
    [
        'npx "{{agent_1_result}}" ran',
        'npx -y "{{agent_1_result}}" ran',
        'npx -p "{{agent_1_result}}" tool',
        'npm exec -- "{{agent_1_result}}" ran',
        'poetry run "{{agent_1_result}}" ran',
        'uv run --frozen "{{agent_1_result}}" ran',
        'pipenv run "{{agent_1_result}}" ran',
        'hatch run "{{agent_1_result}}" ran',
        'conda run -n base "{{agent_1_result}}" ran',
        'mise exec -- "{{agent_1_result}}" ran',
        'mise exec "{{agent_1_result}}" -- ls',
        'asdf exec "{{agent_1_result}}" ran',
        'direnv exec . "{{agent_1_result}}" ran',
        'nix shell nixpkgs#hello -c "{{agent_1_result}}" ran',
        'devbox run "{{agent_1_result}}" ran',
    ],
)
def test_a_value_naming_the_program_is_asked_for(template: str, tmp_path: Path) -> None:
    arguments = _arguments(template, "touch")
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


@pytest.mark.parametrize(
    "template",
    [
        'npx prettier --check "{{agent_1_result}}"',
        'poetry run pytest "{{agent_1_result}}"',
        'uv run --frozen pytest "{{agent_1_result}}"',
        'mise exec -- ls "{{agent_1_result}}"',
        'direnv exec . ls "{{agent_1_result}}"',
        'nix shell nixpkgs#hello -c ls "{{agent_1_result}}"',
        'conda run -n base python tool.py "{{agent_1_result}}"',
        'tox -e py -- "{{agent_1_result}}"',
    ],
)
def test_a_value_given_to_the_program_is_read_as_before(template: str, tmp_path: Path) -> None:
    decision = decide("shell", _arguments(template, "notes.txt"), ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason
