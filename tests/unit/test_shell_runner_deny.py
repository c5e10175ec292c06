"""The program a package or environment runner runs is a command the rules see, as a wrapper's
is (sec13b: under deny shell(touch:*), `npx touch ran` and `npm exec -- touch ran` ran touch in
bash, allowed; `poetry run`, `uv run`, `mise exec --`, `pnpm exec` … alike by their docs). A
deny or ask rule naming that program holds even where a rule allows the runner (deny wins, as
everywhere); a rule allowing the runner (`shell(npx:*)`, `shell(uv run:*)`) still answers for
the rest of what it runs. The leader's replay keeps 0.12.3's reading (patch
shell-reading-round-13)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.leader.shell_readings import as_replayed
from xsky.security.delegation import delegation
from xsky.security.permissions import (
    ApprovedRule,
    PermissionLayer,
    PermissionSettings,
    decide,
    run_rules_for,
)
from xsky.security.roles import BUILTIN_ROLES
from xsky.security.shell_parse import read_as_of

# Each ran touch in bash past deny shell(touch:*) (npm reads an option it does not know as a
# flag: --no-install and --foo are no values, touch is the program)
IN_BASH = [
    "npx touch ran",
    "npx --yes touch ran",
    "npm exec -- touch ran",
    "npm exec touch ran",
    "npx --no-install touch ran",
    "npx --foo touch ran",
]
# The same by the runners' docs (not installed here)
BY_DOCS = [
    "poetry run touch ran",
    "mise exec -- touch ran",
    "mise x node@20 -- touch ran",
    "uv run touch ran",
    "uv run --python 3.12 touch ran",
    "uvx touch ran",
    "pnpm exec touch ran",
    "yarn exec touch ran",
    "bunx touch ran",
    "pipx run touch ran",
    "hatch run touch ran",
    "conda run -n base touch ran",
    "direnv exec . touch ran",
    "nix shell nixpkgs#hello -c touch ran",
    "devbox run touch ran",
    "npx npx touch ran",
    "poetry run uv run /usr/bin/touch ran",
]
# Common calls of runners: none asked or denied where the role, or a rule, allows the runner
COMMON = [
    "npx prettier --check .",
    "npx tsc",
    "npx tsc --noEmit -p .",
    "npx eslint --fix src/",
    "npx jest --coverage",
    "npx -y create-vite@latest app --template react",
    "npx -p typescript tsc --version",
    "npm exec -- prettier --check .",
    "uv run pytest",
    "uv run python -m pytest",
    "uv run --with requests python fetch.py",
    "uv run --python 3.12 pytest",
    "uvx ruff check .",
    "poetry run pytest",
    "poetry run python manage.py migrate",
    "pnpm exec prettier --check .",
    "hatch run pytest -q",
    "conda run -n base python tool.py",
    "mise exec -- node -v",
    "direnv exec . make test",
    "nix develop -c make",
    "bundle exec rspec",
]
RUNNER_RULES = [
    "shell(npx:*)",
    "shell(npm exec:*)",
    "shell(uv run:*)",
    "shell(uvx:*)",
    "shell(poetry run:*)",
    "shell(pnpm exec:*)",
    "shell(hatch run:*)",
    "shell(conda run:*)",
    "shell(mise exec:*)",
    "shell(direnv exec:*)",
    "shell(nix develop:*)",
    "shell(bundle exec:*)",
]
ASKED = BUILTIN_ROLES["architect"]  # (shell only with a person's approval)


def _settings(
    allow: list[str] | None = None, ask: list[str] | None = None, **kw: object
) -> PermissionSettings:
    layer = PermissionLayer(
        scope="user", path="s.json", allow=allow or [], ask=ask or [], deny=["shell(touch:*)"]
    )
    return PermissionSettings(layers=[layer], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", IN_BASH)
def test_the_runner_runs_the_program_in_bash_and_it_is_denied(command: str, tmp_path: Path) -> None:
    if shutil.which("npx") is None:
        pytest.skip("npm is not installed")
    env = {"HOME": str(tmp_path), "npm_config_cache": str(tmp_path / ".npm")}
    bash(command, env, tmp_path, timeout=90)
    assert (tmp_path / "ran").exists()  # the canary: touch ran
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "deny", decision.reason
    assert decision.rule == "shell(touch:*)"


@pytest.mark.parametrize("command", IN_BASH + BY_DOCS)
def test_a_deny_rule_sees_the_program(command: str) -> None:
    assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "deny"
    # deny wins over a rule allowing the runner, in every mode
    for mode in ("default", "bypass"):
        settings = _settings(RUNNER_RULES + ["shell(pipx run:*)", "shell(npx touch:*)"], mode=mode)
        assert decide("shell", {"command": command}, ASKED, settings, "/ws").effect == "deny"
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it (a leader's replay keeps that)
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "allow"


def test_a_persons_approval_of_the_call_lifts_no_deny_rule() -> None:
    command = "npx touch ran"
    approved = [
        ApprovedRule(rule=r, request_id="A-1") for r in run_rules_for("shell", {"command": command})
    ]
    settings = _settings(approved_rules=approved)
    assert decide("shell", {"command": command}, ASKED, settings, "/ws").effect == "deny"


def test_an_ask_rule_naming_the_program_asks_under_a_rule_allowing_the_runner() -> None:
    settings = _settings(["shell(npx:*)"], ask=["shell(rm:*)"])
    decision = decide("shell", {"command": "npx rm -rf build"}, ASKED, settings, "/ws")
    assert decision.effect == "ask" and decision.rule == "shell(rm:*)"


@pytest.mark.parametrize("command", COMMON)
def test_common_calls_stay_allowed(command: str) -> None:
    arguments = {"command": command}
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"
    for role in (ROLE, ASKED):  # a rule allowing the runner answers for what it runs
        decision = decide("shell", arguments, role, _settings(RUNNER_RULES), "/ws")
        assert decision.effect == "allow", decision.reason
    approved = [ApprovedRule(rule=r, request_id="A-1") for r in run_rules_for("shell", arguments)]
    assert (
        decide("shell", arguments, ASKED, _settings(approved_rules=approved), "/ws").effect
        == "allow"
    )


def test_the_roles_checks_see_the_program_as_a_wrappers() -> None:
    # asked as `env sed e f`, `python3 -c …` are, where only the role allows the runner
    for command in ("npx sed e f", "uv run python -c 'print(1)'", "poetry run sed -i 's/a/b/e' f"):
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "ask"
        # a rule allowing the runner allows the code it runs (docs/permissions.md)
        settings = _settings(RUNNER_RULES)
        assert decide("shell", {"command": command}, ROLE, settings, "/ws").effect == "allow"


def test_the_leader_replays_the_reading_of_its_release() -> None:
    command = "npx touch ran"

    def decided() -> object:
        return delegation("shell", {"command": command}, ["shell(npx:*)"], ["shell(touch:*)"])

    assert as_replayed(decided, lambda patch: True)[1] == "a deny rule holds: 'shell(touch:*)'"
    asked: list[str] = []
    assert "deny rule" not in as_replayed(decided, lambda p: asked.append(p) or False)[1]
    assert asked == ["shell-reading-round-13"]
    rules = run_rules_for("shell", {"command": command})
    assert "shell(=touch ran)" in rules
    with read_as_of((0, 12, 3)):
        assert run_rules_for("shell", {"command": command}) == ["shell(=npx touch ran)"]


def test_runners_in_runners_and_many_maybe_programs_are_bounded() -> None:
    # each word after an option may be the program, and each of those again: read once each
    # (2^k readings otherwise), and past a bound asked for, never allowed
    command = "npx " + " ".join(["-a npx"] * 18) + " -a touch ran"
    assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect != "allow"
    for command in ("npx " * 12 + "touch ran", "uv run " + "--with a " * 40 + "pytest"):
        decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws")
        assert decision.effect == "ask" and decision.hard, decision.reason
    assert (
        decide("shell", {"command": "npx " * 6 + "touch ran"}, ROLE, DENY_TOUCH, "/ws").effect
        == "deny"
    )


def _installed(name: str, *where: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=":".join(where))


def test_version_managers_and_env_file_runners_are_runners(tmp_path: Path) -> None:
    # (sec13b: `pyenv exec touch ran`, `dotenv run touch ran` ran touch in bash, allowed)
    ran = 0
    pyenv = _installed("pyenv", str(Path.home() / ".pyenv/bin"))
    if pyenv is not None:
        env = {"HOME": str(tmp_path), "PYENV_ROOT": str(Path(pyenv).resolve().parent.parent)}
        bash(f"{pyenv} exec touch ran", env, tmp_path)
        ran += (tmp_path / "ran").exists()
        (tmp_path / "ran").unlink(missing_ok=True)
    dotenv = _installed("dotenv", str(Path(sys.executable).parent))
    if dotenv is not None:
        (tmp_path / ".env").write_text("")
        bash(f"{dotenv} run touch ran", {"HOME": str(tmp_path)}, tmp_path)
        ran += (tmp_path / "ran").exists()
    if pyenv is None and dotenv is None:
        pytest.skip("neither pyenv nor python-dotenv's CLI is installed")
    assert ran  # the canary: touch ran
    for command in (
        "pyenv exec touch ran",
        "rbenv exec touch ran",
        "dotenv run touch ran",
        "dotenv -f .env run -- touch ran",
        "dotenvx run -- touch ran",
        "volta run --node 20 touch ran",
        "fnm exec --using 20 -- touch ran",
    ):
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "deny"
    assert (
        decide("shell", {"command": "pyenv exec pytest -q"}, ROLE, DENY_TOUCH, "/ws").effect
        == "allow"
    )


def test_a_runner_run_as_a_python_module_is_a_runner(tmp_path: Path) -> None:
    # (review17: `python -m dotenv run touch ran` ran touch in bash past deny shell(touch:*),
    # allowed, as `dotenv run touch ran` did before sec13b; pipx, poetry, uv … run as modules)
    dotenv = Path(sys.executable).parent / "dotenv"
    if dotenv.exists():
        (tmp_path / ".env").write_text("")
        bash(f"{sys.executable} -m dotenv run touch ran", {"HOME": str(tmp_path)}, tmp_path)
        assert (tmp_path / "ran").exists()  # the canary: touch ran
    for command in (
        "python3 -m dotenv run touch ran",
        "python3 -mdotenv run -- touch ran",
        "python -Bm dotenv -f .env run touch ran",
        "python3 -m poetry run touch ran",
        "python3 -m uv run touch ran",
        "python3 -m pipx run touch ran",
    ):
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "deny"
        with read_as_of((0, 12, 3)):  # (the leader's replay of 0.12.3's reading)
            assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "allow"
    for command in (
        "python3 -m poetry run pytest -q",
        "python3 -m uv run pytest",
        "python3 -m dotenv list",
        "python3 -m pytest -q",
        "python3 tool.py run touch",
    ):
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "allow"
