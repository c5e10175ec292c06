"""A person's "allow for this run" answers a command with the values it held then. Allowed
for the run, `curl -s "{{item}}"` over a forEach's items let a later item `-o<file>` write a
file unasked (a sixth review; each premise checked with real bash): the person's rule passes
later calls whose values cannot be code or an option there, and asks again for one that can.
A rule written in the settings (the plan's author knew values come) allows as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import bash
from xsky.plan.variables import render_command
from xsky.security.permissions import (
    ApprovedRule,
    PermissionLayer,
    PermissionSettings,
    decide,
    run_rules_for,
)
from xsky.security.roles import BUILTIN_ROLES

ROLE = BUILTIN_ROLES["shell"]
ASK_ALL = PermissionLayer(scope="user", path="settings.json", ask=["shell"])
# (the plan's command, the first item a person allowed for the run, a later item, its effect)
LATER_ITEMS = [
    ('sort "{{item}}" notes.txt', "more.txt", "-odone", "done"),
    ('sed -n "/x/p" notes.txt "{{item}}"', "more.txt", "--expression=1e touch done", "done"),
    ('sed -i "s/hello/{{item}}/" notes.txt', "bye", "x/;1e touch done\n#", "done"),
]  # fmt: skip


def _call(template: str, item: str) -> dict[str, object]:
    command, values = render_command(template, {}, {"item": item}, {})
    return {"command": command, "values": values}


@pytest.mark.parametrize(("template", "first", "later", "made"), LATER_ITEMS)
def test_the_later_item_does_what_it_says(
    template: str, first: str, later: str, made: str, tmp_path: Path
) -> None:
    call = _call(template, later)
    (tmp_path / "notes.txt").write_text("hello\n")
    env = {**call["values"], "HOME": str(tmp_path)}  # type: ignore[dict-item]
    bash(str(call["command"]), env, tmp_path)
    assert (tmp_path / made).exists()


@pytest.mark.parametrize(("template", "first", "later", "made"), LATER_ITEMS)
def test_a_run_approval_asks_again_for_a_value_that_makes_another_call(
    template: str, first: str, later: str, made: str, tmp_path: Path
) -> None:
    approved = _call(template, first)
    assert decide("shell", approved, ROLE, PermissionSettings(layers=[ASK_ALL]), str(tmp_path))
    rules = run_rules_for("shell", approved)
    settings = PermissionSettings(
        layers=[ASK_ALL], approved_rules=[ApprovedRule(rule=r, request_id="A-1") for r in rules]
    )
    decision = decide("shell", _call(template, later), ROLE, settings, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    assert "for this run answered the command with the values it held then" in decision.reason


def test_a_run_approval_passes_later_plain_values(tmp_path: Path) -> None:
    template = 'sort "{{item}}" -o sorted.txt'
    rules = run_rules_for("shell", _call(template, "a.txt"))
    settings = PermissionSettings(
        layers=[ASK_ALL], approved_rules=[ApprovedRule(rule=r, request_id="A-1") for r in rules]
    )
    for item in ("b.txt", "notes 2.txt", "https://example.com/?q=1"):
        decision = decide("shell", _call(template, item), ROLE, settings, str(tmp_path))
        assert decision.effect == "allow", (item, decision.reason)


def test_a_settings_rule_allows_as_written(tmp_path: Path) -> None:
    template = 'sort "{{item}}" -o sorted.txt'
    exact = run_rules_for("shell", _call(template, "a.txt"))
    settings = PermissionSettings(
        layers=[PermissionLayer(scope="project", path="p.json", allow=exact)]
    )
    decision = decide("shell", _call(template, "-odone"), ROLE, settings, str(tmp_path))
    assert decision.effect == "allow", decision.reason
