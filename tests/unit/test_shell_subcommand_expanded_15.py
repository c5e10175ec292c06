"""A subcommand the shell makes when the command runs is asked for when a deny or ask rule
names one of that program (sec15): under deny shell(docker run:*), v0.12.5 allowed `docker
$(echo run) alpine`, `docker ${X:-run} alpine`, `docker {run,} alpine`, `docker ru? alpine` (a
file named run there), `echo run alpine | xargs docker` and `docker {{…}} alpine` given 'run' —
and each created a container (judged below by effect: the docker CLI's POST
/containers/create reaching a local stand-in for its daemon). The 0.12.6 reading; the leader's
replay keeps 0.12.5's (patch shell-reading-round-15)."""

from __future__ import annotations

import http.server
import shutil
import threading
from pathlib import Path

import pytest

from tests.real_bash import ROLE, bash, rendered
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.shell_parse import read_as_of

SETTINGS = PermissionSettings(
    layers=[
        PermissionLayer(
            scope="user", path="s.json", deny=["shell(docker run:*)", "shell(kubectl delete:*)"]
        )
    ]
)
EXPANDED = [
    "docker $(echo run) alpine",
    "docker `echo run` alpine",
    "X=; docker ${X:-run} alpine",
    "docker {run,} alpine",
    "docker ru? alpine",
    "echo run alpine | xargs docker",
    "echo run | xargs -I{} docker {} alpine",
]
KEPT = [
    "docker logs $(docker ps -q | head -1)",
    "docker rm $(docker ps -aq)",
    "ls | xargs docker rm",
    "cat ids | xargs kubectl get",
    "kubectl get pods -l app=$APP",
    "ls | xargs wc -l",
    "gh pr view $(git branch --show-current)",
]


def _effect(arguments: dict[str, object]) -> str:
    return decide("shell", arguments, ROLE, SETTINGS, "/ws").effect


@pytest.mark.parametrize("command", EXPANDED)
def test_a_subcommand_made_when_it_runs_is_asked_for(command: str) -> None:
    assert _effect({"command": command}) == "ask"
    with read_as_of((0, 12, 5)):
        assert _effect({"command": command}) == "allow"


def test_a_value_in_the_subcommands_place_is_asked_for() -> None:
    arguments = rendered("printf %s {{agent_1_result}} | xargs docker", "run alpine")
    assert _effect(arguments) == "ask"


@pytest.mark.parametrize("command", KEPT)
def test_an_expansion_past_the_subcommand_stays_allowed(command: str) -> None:
    assert _effect({"command": command}) == "allow"


@pytest.mark.skipif(shutil.which("docker") is None, reason="needs the docker CLI")
@pytest.mark.parametrize("command", EXPANDED)
def test_each_runs_docker_run(command: str, tmp_path: Path) -> None:
    seen: list[str] = []

    class Daemon(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            body = b"OK" if self.path.endswith("/_ping") else b"{}"
            self.send_response(200)
            self.send_header("Api-Version", "1.43")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_HEAD = do_POST = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    (tmp_path / "run").touch()  # (what `ru?` names)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Daemon)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            "DOCKER_HOST": f"tcp://127.0.0.1:{server.server_port}",
            "DOCKER_CONFIG": str(tmp_path / ".docker"),
            "PATH": f"{Path(shutil.which('docker') or '').parent}:/usr/bin:/bin",
        }
        bash(command, env, tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert any(line.startswith("POST") and "/containers/create" in line for line in seen)
