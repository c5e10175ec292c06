"""A deny or ask rule naming a subcommand holds for the ways its CLI reads that subcommand
(sec15). Under v0.12.5 each of these ran what the rule denies, allowed:

- docker's `--` before the subcommand (`docker -- run alpine`: the docker CLI ends its own
  options there and sent POST /containers/create to its daemon — judged below by effect);
- options between a rule's subcommand words (`gh pr -R o/r merge`, `aws s3 --region r rm`:
  aws sent DELETE; `kubectl config --kubeconfig k delete-context c` deleted the context);
- aliases: helm's uninstall (un, del, delete), npm's aliases and abbreviations (`npm un x`
  uninstalled, `npm pu` published — by effect below), docker's `volume/network remove`,
  nerdctl's management commands, gh's `secret remove`, `terraform apply -destroy`;
- a {{…}} value read where the program reads its subcommand (`docker {{…}} alpine` given 'run').

The 0.12.6 reading holds them; the leader's replay keeps 0.12.5's (patch
shell-reading-round-15)."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest

from tests.real_bash import ROLE, bash, rendered
from xsky.leader.shell_readings import as_replayed
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.shell_parse import read_as_of

RULES = [
    "shell(docker run:*)",
    "shell(nerdctl run:*)",
    "shell(helm uninstall:*)",
    "shell(gh pr merge:*)",
    "shell(gh secret delete:*)",
    "shell(terraform destroy:*)",
    "shell(aws s3 rm:*)",
    "shell(npm publish:*)",
    "shell(npm uninstall:*)",
    "shell(docker volume rm:*)",
    "shell(kubectl delete:*)",
    "shell(kubectl config delete-context:*)",
    "shell(kubectl rollout restart:*)",
]
SETTINGS = PermissionSettings(layers=[PermissionLayer(scope="user", path="s.json", deny=RULES)])

DENIED = [
    "docker -- run alpine",
    "docker --tls -- run alpine",
    "nerdctl container run alpine",
    "helm delete r",
    "helm --kube-context x del r",
    "helm un r",
    "gh pr -R o/r merge 1",
    "gh secret remove X",
    "terraform apply -destroy",
    "terraform -chdir=infra apply -auto-approve -destroy",
    "aws s3 --region us-east-1 rm s3://b/k",
    "aws s3 --profile=p rm s3://b/k",
    "npm pu",
    "npm --registry http://r publ",
    "npm un x",
    "npm rm x",
    "docker volume remove v",
    "docker --config c volume -D remove v",
    "kubectl config --kubeconfig k delete-context c",
    "kubectl rollout -n x restart deploy/y",
]
ALLOWED = [
    "kubectl -- delete ns x",  # (kubectl prints its help: -- ends no option before a command)
    "helm list",
    "helm install r c",
    "npm install",
    "npm i x",
    "npm run build",
    "npm test",
    "docker volume ls",
    "docker volume create v",
    "gh pr list",
    "gh pr -R o/r view 1",
    "terraform apply",
    "terraform plan -destroy",
    "aws s3 ls",
    "aws s3 --region r cp a s3://b/",
    "kubectl config get-contexts",
    "kubectl rollout status deploy/y",
]


def _effect(command: str | dict[str, object]) -> str:
    arguments = {"command": command} if isinstance(command, str) else command
    return decide("shell", arguments, ROLE, SETTINGS, "/ws").effect


@pytest.mark.parametrize("command", DENIED)
def test_the_subcommand_is_denied_however_its_cli_reads_it(command: str) -> None:
    assert _effect(command) == "deny"
    with read_as_of((0, 12, 5)):
        assert _effect(command) == "allow"


@pytest.mark.parametrize("command", ALLOWED)
def test_other_subcommands_stay_allowed(command: str) -> None:
    assert _effect(command) == "allow"


@pytest.mark.parametrize(
    "template",
    [
        "docker {{agent_1_result}} alpine",
        "kubectl {{agent_1_result}} ns x",
        "gh pr {{agent_1_result}} 1",
    ],
)
def test_a_value_in_the_subcommands_place_is_asked_for(template: str) -> None:
    arguments = rendered(template, "run")
    assert _effect(arguments) == "ask"
    with read_as_of((0, 12, 5)):
        assert _effect(arguments) == "allow"


@pytest.mark.parametrize(
    "template",
    [
        "kubectl logs {{agent_1_result}}",
        "kubectl get pods -n {{agent_1_result}}",
        "docker -H {{agent_1_result}} ps",
        "gh pr view {{agent_1_result}}",
        "docker ps --filter name={{agent_1_result}}",
    ],
)
def test_a_value_past_the_subcommand_stays_allowed(template: str) -> None:
    assert _effect(rendered(template, "run")) == "allow"


def test_the_leader_replays_the_reading_of_its_release() -> None:
    def decided() -> str:
        return _effect("helm delete r")

    assert as_replayed(decided, lambda patch: True) == "deny"
    asked: list[str] = []
    assert as_replayed(decided, lambda patch: asked.append(patch) or False) == "allow"
    assert asked == ["shell-reading-round-15"]


@pytest.mark.skipif(shutil.which("docker") is None, reason="needs the docker CLI")
def test_docker_runs_the_subcommand_after_dashdash(tmp_path: Path) -> None:
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

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Daemon)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            "DOCKER_HOST": f"tcp://127.0.0.1:{server.server_port}",
            "DOCKER_CONFIG": str(tmp_path / "docker"),
            "PATH": f"{Path(shutil.which('docker') or '').parent}:/usr/bin:/bin",
        }
        bash("docker -- run alpine", env, tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert any(line.startswith("POST") and "/containers/create" in line for line in seen)
    assert _effect("docker -- run alpine") == "deny"


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm")
def test_npm_un_uninstalls(tmp_path: Path) -> None:
    (tmp_path / "lp").mkdir()
    (tmp_path / "lp" / "package.json").write_text('{"name": "lp", "version": "1.0.0"}')
    manifest = {"name": "canary", "version": "1.0.0", "dependencies": {"lp": "file:./lp"}}
    (tmp_path / "package.json").write_text(json.dumps(manifest))
    env = {"HOME": str(tmp_path), "npm_config_cache": str(tmp_path / ".npm")}
    flags = "--offline --no-audit --no-fund"
    bash(f"npm install {flags}", env, tmp_path, timeout=120)
    assert "lp" in json.loads((tmp_path / "package.json").read_text())["dependencies"]
    bash(f"npm un lp {flags}", env, tmp_path, timeout=120)
    assert "lp" not in json.loads((tmp_path / "package.json").read_text()).get("dependencies", {})
    assert _effect("npm un lp") == "deny"
