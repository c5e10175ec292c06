"""A person's "allow for this run" of a command that an ask rule met through a subcommand
reading past an unknown global option (sec14: `docker --tls run` under ask shell(docker
run:*)) answers the next identical call: it was asked again at each one, the approval's exact
rule never matching the reading (review18). A deny rule still holds past it."""

from __future__ import annotations

import pytest

from tests.real_bash import ROLE
from xsky.security.permissions import (
    PermissionLayer,
    PermissionSettings,
    decide,
    run_rules_for,
)
from xsky.security.rules import ApprovedRule

ASK = ["shell(docker run:*)", "shell(kubectl delete:*)", "shell(npm publish:*)"]
COMMANDS = [
    "docker --tls run alpine",
    "kubectl -v 9 delete ns x",
    "npm --registry https://r.example publish",
]


def _settings(approved: list[str], deny: list[str] | None = None) -> PermissionSettings:
    return PermissionSettings(
        layers=[PermissionLayer(scope="user", path="s.json", ask=ASK, deny=deny or [])],
        approved_rules=[ApprovedRule(rule=r, request_id="r1") for r in approved],
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_an_approval_for_the_run_answers_the_same_call(command: str) -> None:
    arguments = {"command": command}
    assert decide("shell", arguments, ROLE, _settings([]), "/ws").effect == "ask"
    approved = _settings(run_rules_for("shell", arguments))
    decision = decide("shell", arguments, ROLE, approved, "/ws")
    assert decision.effect == "allow", decision.reason


@pytest.mark.parametrize("command", COMMANDS)
def test_it_answers_no_other_call(command: str) -> None:
    approved = _settings(run_rules_for("shell", {"command": command}))
    other = {"command": command.replace(command.split()[1], "--debug", 1)}
    assert decide("shell", other, ROLE, approved, "/ws").effect == "ask"


def test_a_deny_rule_still_holds() -> None:
    arguments = {"command": "docker --tls run alpine"}
    settings = _settings(run_rules_for("shell", arguments), deny=["shell(docker run:*)"])
    assert decide("shell", arguments, ROLE, settings, "/ws").effect == "deny"
