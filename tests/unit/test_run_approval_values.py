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


def test_the_values_the_person_approved_pass_on_their_rule(tmp_path: Path) -> None:
    # review14: the approval asked again for the very call approved (the same risky value), so
    # a retry or a repeated item waited on a person once more.
    template = 'sort "{{item}}" notes.txt'
    call = _call(template, "-r")
    rules = run_rules_for("shell", call)
    values = call["values"]
    assert isinstance(values, dict)
    settings = PermissionSettings(
        layers=[ASK_ALL],
        approved_rules=[ApprovedRule(rule=r, request_id="A-1", values=values) for r in rules],
    )
    assert decide("shell", call, ROLE, settings, str(tmp_path)).effect == "allow"
    other = decide("shell", _call(template, "-odone"), ROLE, settings, str(tmp_path))
    assert other.effect == "ask" and not other.hard


def test_a_role_only_a_person_vouches_for_stays_so(tmp_path: Path) -> None:
    # review14: such a role's call is a hard ask without a rule (no mode, no leader lifts it);
    # after a person's run rule, a later risky value was a plain ask — bypass mode allowed it
    template = 'sort "{{item}}" notes.txt'
    rules = run_rules_for("shell", _call(template, "a.txt"))
    settings = PermissionSettings(
        layers=[ASK_ALL],
        approved_rules=[ApprovedRule(rule=r, request_id="A-1") for r in rules],
        person_only_tools=["shell"],
    )
    decision = decide("shell", _call(template, "-odone"), ROLE, settings, str(tmp_path))
    assert decision.effect == "ask" and decision.hard, decision
    bypass = settings.model_copy(update={"mode": "bypass"})
    assert decide("shell", _call(template, "-odone"), ROLE, bypass, str(tmp_path)).effect == "ask"
