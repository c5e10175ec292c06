"""bun reads a project's package.json scripts and its .js/.ts files as code, as npm does
(`bun run test` runs package.json's test script; `bun test` runs the project's test files):
round 14's table named bun twice, and its second entry — "no project files" — replaced the
first, so `printf %s "{{…}}" > package.json; bun run test` was allowed where the same with
npm test is asked for (review18, by bun's docs: bun is not installed here)."""

from __future__ import annotations

import pytest

from tests.real_bash import DENY_TOUCH, ROLE
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

V = 'printf %s "{{agent_1_result}}"'


@pytest.mark.parametrize(
    "template",
    [f"{V} > package.json; bun run test", f"{V} > index.ts; bun test", f"{V} > f.js; bun f.js"],
)
def test_it_is_asked_for(template: str) -> None:
    command, values = render_command(template, {"1": "x"}, {}, {})
    arguments = {"command": command, "values": values}
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "ask"


def test_other_files_stay_allowed() -> None:
    command, values = render_command(f"{V} > notes.md; bun test", {"1": "x"}, {}, {})
    arguments = {"command": command, "values": values}
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"
