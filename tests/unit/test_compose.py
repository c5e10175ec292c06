"""docker-compose.yml is a valid Compose file, and its services run what the suite runs.

The file is checked against the Compose Specification's JSON schema (vendored as
tests/fixtures/compose-spec.json, Apache-2.0; see tests/fixtures/README.md). Every command a
service built from this project runs, and every `docker compose run … starter …` the file
tells people to type, is parsed by the real argument parser of worker.py or starter.py: a
renamed flag or subcommand fails here, not in someone's cluster.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = ROOT / "tests" / "fixtures" / "compose-spec.json"


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    # The draft the schema declares, by name: jsonschema does not recognise this spelling of
    # draft-07's URI, and a newer schema on another draft must be looked at, not guessed at.
    declared = schema["$schema"]
    assert re.fullmatch(r"https?://json-schema\.org/draft-07/schema#?", declared), declared
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )


def problems(document: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator().iter_errors(document)
    ]


def test_docker_compose_yml_is_valid_against_the_compose_specification_schema():
    assert problems(compose()) == []


def test_the_schema_check_rejects_a_misspelt_service_key():
    broken = copy.deepcopy(compose())
    broken["services"]["worker"]["comand"] = broken["services"]["worker"].pop("command")
    found = problems(broken)
    assert found and any("comand" in p for p in found), found


def own_services() -> dict[str, dict[str, Any]]:
    """The services built from this project's Dockerfile (the others are upstream images)."""
    return {name: service for name, service in compose()["services"].items() if "build" in service}


def argv(value: str | list[str] | None) -> list[str]:
    """A command or entrypoint as the argv the container gets (a string is split by the shell's rules)."""
    if value is None:
        return []
    return shlex.split(value) if isinstance(value, str) else [str(part) for part in value]


class _Parser(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("worker.py built its parser")
        self.parser = parser


def worker_parser(monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """worker.py's own argument parser, taken from its main() at the moment it parses.

    main() first re-executes the process without secret variables; that step is stubbed,
    and parsing is stopped before anything runs.
    """
    import worker

    def caught(parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> argparse.Namespace:
        raise _Parser(parser)

    with monkeypatch.context() as patch:
        patch.setattr(worker.secrets, "hide_from_environment", lambda argv: None)
        patch.setattr(argparse.ArgumentParser, "parse_args", caught)
        patch.setattr(argparse.ArgumentParser, "parse_known_args", caught)
        with pytest.raises(_Parser) as built:
            worker.main([])
    return built.value.parser


def parse(
    script: str,
    parser: argparse.ArgumentParser,
    args: list[str],
    capsys: pytest.CaptureFixture[str],
) -> argparse.Namespace:
    try:
        return parser.parse_args(args)
    except SystemExit:
        said = capsys.readouterr().err.strip()
    pytest.fail(f"{script} rejects {shlex.join(args)!r}: {said}")


def test_the_compose_services_built_here_run_worker_py_or_starter_py_with_arguments_their_parsers_accept(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import worker

    services = own_services()
    assert {"worker", "browser-worker", "starter"} <= services.keys()
    parsers = {"worker.py": worker_parser(monkeypatch), "starter.py": build_parser()}
    for name, service in services.items():
        full = argv(service.get("entrypoint")) + argv(service.get("command"))
        assert full[:1] == ["python"] and len(full) >= 2, f"{name}: {full}"
        script = full[1]
        assert script in parsers and (ROOT / script).is_file(), (
            f"{name} runs {script}, not worker.py or starter.py"
        )
        if script == "worker.py":
            args = parse(script, parsers[script], full[2:], capsys)
            worker.parse_kinds(
                args.kinds
            )  # every kind named exists (exits with the names otherwise)
        elif full[2:]:
            parse(script, parsers[script], full[2:], capsys)


def test_the_starter_commands_the_compose_file_shows_are_ones_starter_py_accepts(
    capsys: pytest.CaptureFixture[str],
):
    shown = re.findall(
        r"^#\s+docker compose run --rm starter (.+)$", COMPOSE.read_text(encoding="utf-8"), re.M
    )
    assert shown, "docker-compose.yml no longer shows how to run the starter"
    starter = compose()["services"]["starter"]
    assert argv(starter.get("entrypoint")) == ["python", "starter.py"]
    for line in shown:
        args = parse("starter.py", build_parser(), shlex.split(line), capsys)
        plan = getattr(args, "plan", None)
        if plan is not None:  # the service mounts ./examples at /app/examples
            assert (ROOT / plan).is_file(), f"{line}: {plan} is not in the repository"


def test_the_dockerfile_is_the_one_the_services_build_and_it_holds_every_module_they_import():
    for name, service in own_services().items():
        build = service["build"]
        context = build if isinstance(build, str) else build.get("context", ".")
        dockerfile = (
            "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
        )
        assert (ROOT / context / dockerfile).is_file(), (
            f"{name} builds {context}/{dockerfile}, which does not exist"
        )
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    copied = {
        part.rstrip("/")
        for line in text.splitlines()
        if line.startswith("COPY ")
        for part in line.split()[1:-1]
    }
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    top = {pattern.rstrip("*") for pattern in setup["packages"]["find"]["include"]}
    wanted = top | {f"{module}.py" for module in setup["py-modules"]}
    assert wanted <= copied, f"the image lacks {sorted(wanted - copied)}"
    assert re.search(r'^CMD \["python", "worker\.py"\]$', text, re.M), (
        "the image's default command is not worker.py"
    )


def worker_services() -> dict[str, dict[str, Any]]:
    """The services that run worker.py (by their command, or by the image's: worker.py)."""
    workers = {}
    for name, service in own_services().items():
        full = argv(service.get("entrypoint")) + argv(service.get("command"))
        if not full or full[1:2] == ["worker.py"]:
            workers[name] = service
    return workers


def shared_mounts(service: dict[str, Any]) -> list[str]:
    """The service's mounts another container could mount too: named volumes and host paths
    (an anonymous volume or a tmpfs is the container's own)."""
    shared = []
    for mount in service.get("volumes", []):
        if isinstance(mount, str):
            source = mount.split(":")[0] if ":" in mount else ""
        else:
            source = "" if mount.get("type") == "tmpfs" else str(mount.get("source") or "")
        if source:
            shared.append(source)
    return shared


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.partition("=")[::2] for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def test_no_worker_mounts_a_volume_or_folder_another_container_could_share():
    workers = worker_services()
    assert {"worker", "browser-worker"} <= workers.keys()
    for name, service in workers.items():
        assert shared_mounts(service) == [], (
            f"{name} mounts {shared_mounts(service)}: workers keep what others need in the store"
        )
    broken = copy.deepcopy(workers["worker"])
    broken["volumes"] = ["xsky-data:/data", {"type": "tmpfs", "target": "/tmp"}, "/scratch"]
    assert shared_mounts(broken) == ["xsky-data"]


def test_every_worker_and_the_starter_use_the_s3_store_whose_bucket_a_service_creates_first():
    from xsky.storage import parse_store

    services = compose()["services"]
    for name, service in {**worker_services(), "starter": services["starter"]}.items():
        env = environment(service)
        location = parse_store(env.get("XSKY_STORE"))
        assert location.s3, (
            f"{name} has no XSKY_STORE=s3://…: it would keep results on its own disk"
        )
        endpoint = env.get("AWS_ENDPOINT_URL", "")
        host = re.match(r"https?://([^:/]+)", endpoint)
        assert host and host[1] in services, (
            f"{name}: AWS_ENDPOINT_URL={endpoint!r} is no service here"
        )
        assert env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"), name
        if name == "starter":
            continue
        creators = [
            dep
            for dep in service.get("depends_on", {})
            if services[dep].get("depends_on", {}).get(host[1])
            and location.bucket in argv(services[dep].get("command"))[-1].split("/")
        ]
        assert creators and all(
            service["depends_on"][c]["condition"] == "service_completed_successfully"
            for c in creators
        ), f"{name} may start before bucket {location.bucket!r} exists"
