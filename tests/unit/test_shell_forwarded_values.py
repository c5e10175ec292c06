"""A package runner hands a value to the program it runs, which reads it where it reads options:
`npm run show -- "{{…}}"` (the `-- "{{…}}"` the docs advise: npm gives what follows to the
script's command) and `npx show -n 1p f.txt "{{…}}"` ran a value '--expression=1e touch ran' as
sed's option past deny shell(touch:*) (sec12). Judged by effect, in real bash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

PACKAGE = """cat > package.json <<'J'
{"name":"x","version":"1.0.0","scripts":{"show":"sed -n 1p f.txt"}}
J
echo hello > f.txt
mkdir -p node_modules/.bin && ln -s "$(command -v sed)" node_modules/.bin/show"""
OPTION = "--expression=1e touch ran"
FORWARDED = [
    'npm run show -- "{{agent_1_result}}"',
    'npm run-script --silent show -- "{{agent_1_result}}"',
    'npx show -n 1p f.txt "{{agent_1_result}}"',
]


@pytest.mark.parametrize("template", FORWARDED)
def test_the_program_run_reads_the_value_as_its_option(template: str, tmp_path: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    bash(PACKAGE, {}, tmp_path)
    command, values = render_command(template, {"1": OPTION}, {}, {})
    env = {"HOME": str(tmp_path), "npm_config_update_notifier": "false", **values}
    bash(command, env, tmp_path, timeout=60)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("template", FORWARDED)
def test_such_a_value_is_asked_for(template: str, tmp_path: Path) -> None:
    command, values = render_command(template, {"1": OPTION}, {}, {})
    arguments = {"command": command, "values": values}
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    with read_as_of((0, 12, 2)):  # as 0.12.2 read it (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


@pytest.mark.parametrize(
    "template",
    [
        'npm run show -- "{{agent_1_result}}"',
        'npm install "{{agent_1_result}}"',
        'npx show -n 1p "{{agent_1_result}}"',
    ],
)
def test_a_value_that_cannot_begin_an_option_is_allowed_as_before(
    template: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": "notes.txt"}, {}, {})
    arguments = {"command": command, "values": values}
    assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"
