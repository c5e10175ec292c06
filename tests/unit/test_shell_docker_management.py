"""docker's management commands name its short subcommands again: `docker container run` is
`docker run`, `docker image rm` is `docker rmi` (docker's own docs: "docker run" is an alias of
"docker container run"). Under deny shell(docker run:*) sec14/review18 left `docker container run
alpine` allowed — the rule names `run`, the command's subcommand word is `container`. The 0.12.5
reading sees the short form; 0.12.4's (a leader's replay) is kept."""

from __future__ import annotations

import pytest

from tests.real_bash import ROLE
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.shell_parse import read_as_of

SETTINGS = PermissionSettings(
    layers=[
        PermissionLayer(
            scope="user",
            path="s.json",
            deny=["shell(docker run:*)", "shell(docker rmi:*)", "shell(podman exec:*)"],
            ask=["shell(docker ps:*)"],
        )
    ]
)


@pytest.mark.parametrize(
    "command",
    [
        "docker container run alpine",
        "docker --tls container run alpine",
        "docker container run --rm -it alpine sh",
        "docker image rm app:1",
        "docker image remove app:1",
        "podman container exec c ls",
    ],
)
def test_the_long_form_is_denied_as_the_short_one(command: str) -> None:
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "deny"
    with read_as_of((0, 12, 4)):
        assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect == "allow"


def test_an_ask_rule_on_the_short_form_asks_for_the_long_one() -> None:
    decision = decide("shell", {"command": "docker container ls -a"}, ROLE, SETTINGS, "/ws")
    assert decision.effect == "ask" and decision.rule == "shell(docker ps:*)"


@pytest.mark.parametrize(
    "command",
    ["docker container inspect c", "docker image ls", "docker image build -t app .", "docker ps"],
)
def test_other_management_calls_are_not_read_as_a_denied_one(command: str) -> None:
    assert decide("shell", {"command": command}, ROLE, SETTINGS, "/ws").effect != "deny"
