"""A deny or ask rule naming a subcommand holds past global options the checker does not know
(sec14: under deny shell(kubectl delete:*), shell(docker run:*), shell(npm publish:*), `kubectl
-nprod delete`, `kubectl -v 9 delete`, `docker --tls run`, `docker -ldebug run`, `npm --registry
URL publish` were allowed — the CLIs read each as that subcommand, as their own --help shows).
Each word past an option written without '=' may be its value or the subcommand: deny and ask
rules see every reading; allow rules only the one normalized() gives. The leader's replay keeps
0.12.4's reading (patch shell-reading-round-14)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.real_bash import ROLE
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.shell_parse import read_as_of

SETTINGS = PermissionSettings(
    layers=[
        PermissionLayer(
            scope="user",
            path="s.json",
            deny=[
                "shell(docker run:*)",
                "shell(kubectl delete:*)",
                "shell(kubectl exec:*)",
                "shell(npm publish:*)",
                "shell(cargo publish:*)",
                "shell(make deploy:*)",
            ],
            ask=["shell(git push:*)"],
            allow=["shell(kubectl get:*)"],
        )
    ]
)
# (command, what its CLI's --help says it runs)
READ_AS_THE_SUBCOMMAND = [
    ("kubectl -nprod delete ns x", "Delete resources"),
    ("kubectl -v 9 delete ns x", "Delete resources"),
    ("kubectl --insecure-skip-tls-verify delete ns x", "Delete resources"),
    ("kubectl -nprod exec p -- ls", "Execute a command in a container"),
    ("docker --tls run alpine", "docker run"),
    ("docker --config /tmp/c run alpine", "docker run"),
    ("docker -ldebug run alpine", "docker run"),
    ("npm --registry https://r.example publish", "Publish a package"),
    ("npm -w a publish", "Publish a package"),
]
BY_DOCS = ["cargo -q publish", "cargo +stable publish", "make -B deploy", "make -j4 deploy"]
STILL_ALLOWED = [
    "kubectl get pods",
    "kubectl -n prod get pods -o wide",
    "docker ps",
    "docker build -t app .",
    "npm test",
    "npm --prefix web run build",
    "make -j4 test",
    "git status",
    "git -C sub log --oneline -5",
]


@pytest.mark.parametrize(("command", "shown"), READ_AS_THE_SUBCOMMAND)
def test_the_cli_reads_the_subcommand_and_the_rule_holds(command: str, shown: str) -> None:
    words = command.split()
    if shutil.which(words[0]) is not None:
        at = next(
            i for i, w in enumerate(words[1:], 1) if w in ("delete", "exec", "run", "publish")
        )
        helped = subprocess.run(
            [*words[: at + 1], "--help"], capture_output=True, text=True, timeout=60
        )
        assert shown in helped.stdout + helped.stderr
    decision = decide("shell", {"command": command}, ROLE, SETTINGS, "/ws")
    assert decision.effect == "deny", decision.reason
    with read_as_of((0, 12, 4)):  # as 0.12.4 read it (a leader's replay keeps that)
        assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "allow"


@pytest.mark.parametrize("command", BY_DOCS)
def test_other_clis_by_their_docs(command: str) -> None:
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "deny"


def test_an_ask_rule_holds_too() -> None:
    decision = decide("shell", {"command": "git --no-advice push"}, ROLE, SETTINGS, "/ws")
    assert decision.effect == "ask" and decision.rule == "shell(git push:*)"


@pytest.mark.parametrize("command", STILL_ALLOWED)
def test_ordinary_calls_stay_allowed(command: str) -> None:
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "allow"
