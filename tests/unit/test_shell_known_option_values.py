"""The value of a global option the checker knows takes one is that option's value, not the
subcommand: under deny shell(make deploy:*), shell(git push:*), shell(kubectl delete:*),
`make -C deploy build`, `git -C push status`, `kubectl --namespace delete get pods` were denied
by round 14's readings past unknown options (review18), though normalized() — and each CLI —
reads them as make build, git status, kubectl get. An option whose value may be left out (make's
-j) and an option the checker does not know still give both readings."""

from __future__ import annotations

import pytest

from tests.real_bash import ROLE
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide

SETTINGS = PermissionSettings(
    layers=[
        PermissionLayer(
            scope="user",
            path="s.json",
            deny=["shell(make deploy:*)", "shell(git push:*)", "shell(kubectl delete:*)"],
        )
    ]
)
ALLOWED = [
    "make -C deploy build",
    "make --directory deploy test",
    "git -C push status",
    "git --git-dir push/.git log",
    "kubectl --namespace delete get pods",
    "kubectl -n delete get pods",
    "kubectl --context delete get pods",
]
DENIED = [
    "make -j deploy",
    "make -C sub deploy",
    "git -C sub push",
    "kubectl -v delete get pods",
    "kubectl -nprod delete ns x",
    "kubectl -n prod delete ns x",
]


@pytest.mark.parametrize("command", ALLOWED)
def test_a_known_options_value_is_no_subcommand(command: str) -> None:
    decision = decide("shell", {"command": command}, ROLE, SETTINGS, "/ws")
    assert decision.effect == "allow", decision.reason


@pytest.mark.parametrize("command", DENIED)
def test_the_subcommand_is_still_denied(command: str) -> None:
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "deny"
