"""A deny or ask rule naming a subcommand holds past any number of options the checker does not
know: round 14 read at most 16 of their words as maybe the subcommand, so `kubectl -v 1` given
16 times before `delete ns x` was allowed under deny shell(kubectl delete:*) — and kubectl, as
docker past 16 `--config DIR` and npm past 16 `--registry URL`, runs that subcommand (review18:
their --help says so). Only the words rules name as a subcommand are read past the options."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from tests.real_bash import ROLE
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide

SETTINGS = PermissionSettings(
    layers=[
        PermissionLayer(
            scope="user",
            path="s.json",
            deny=["shell(kubectl delete:*)", "shell(docker run:*)", "shell(npm publish:*)"],
            ask=["shell(git push:*)"],
        )
    ]
)
MANY = [
    ("kubectl " + "-v 1 " * 16 + "delete ns x", "Delete resources"),
    ("kubectl " + "-v 1 " * 40 + "delete ns x", "Delete resources"),
    ("docker " + "--config /tmp/c " * 16 + "run alpine", "docker run"),
    ("npm " + "--registry https://r.example " * 16 + "publish", "Publish a package"),
]


@pytest.mark.parametrize(("command", "shown"), MANY)
def test_the_rule_holds_past_many_options(command: str, shown: str) -> None:
    words = command.split()
    if shutil.which(words[0]) is not None and words[0] != "npm":
        at = next(i for i, w in enumerate(words) if w in ("delete", "run"))
        helped = subprocess.run(
            [*words[: at + 1], "--help"], capture_output=True, text=True, timeout=60
        )
        assert shown in helped.stdout + helped.stderr
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "deny"


def test_an_ask_rule_too() -> None:
    command = "git " + "--exec-path /x " * 20 + "push"
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "ask"


def test_other_subcommands_stay_allowed_and_quick() -> None:
    command = "kubectl " + "-v 1 " * 1500 + "get pods"
    # CPU time, not wall time: the suite runs beside other work (~0.1 s of CPU here); the bound
    # catches a reading that grows with the square of the options
    started = time.process_time()
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "allow"
    assert time.process_time() - started < 1.0
