"""A command line a package or environment runner gives a shell is a command line the rules
see (sec14: under deny shell(touch:*), `mise exec -c 'touch ran'`, `pnpm -c exec 'echo; touch
ran'`, `yarn exec 'echo; touch ran'` (Yarn 2+) and `pnpm touch ran` (pnpm's implied exec) ran
touch in bash, allowed; `pnpm -c exec echo "{{…}}"` ran a value 'x; touch ran' as code).
pixi run, devbox run, and nix shell/develop, nix-shell, devbox shell … given no command (a
shell reading its input), by their docs. The leader's replay keeps 0.12.4's reading (patch
shell-reading-round-14)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash, rendered
from xsky.leader.shell_readings import as_replayed
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

PKG = {"name": "p", "version": "1.0.0", "scripts": {"s": "echo"}}
# (command, the tool it needs) — each ran touch in bash (mise 2026.9.15, pnpm 10.34.9, yarn 4.18.1)
IN_BASH = [
    ("mise exec -c 'touch ran'", "mise"),
    ("mise x -c 'touch ran'", "mise"),
    ("mise exec --command 'touch ran'", "mise"),
    ("mise exec --command='touch ran'", "mise"),
    ("mise exec -c 'echo hi; touch ran'", "mise"),
    ("pnpm -c exec 'echo hi; touch ran'", "pnpm"),
    ("pnpm --shell-mode exec 'echo hi; touch ran'", "pnpm"),
    ("pnpm touch ran", "pnpm"),
    ("pnpm -s touch ran", "pnpm"),
    ("yarn exec 'echo hi; touch ran'", "yarn"),
]
BY_DOCS = [
    "pixi run 'true; touch ran'",
    "pixi run -e dev 'true && touch ran'",
    "devbox run 'true; touch ran'",
]
VALUES = [
    ('pnpm -c exec echo "{{agent_1_result}}"', "x; touch ran", "pnpm"),
    ('mise exec -c "echo {{agent_1_result}}"', "x; touch ran", "mise"),
]
PIPED = [
    'printf %s "{{agent_1_result}}" | nix shell nixpkgs#hello',
    'printf %s "{{agent_1_result}}" | nix develop',
    'printf %s "{{agent_1_result}}" | nix-shell -p hello',
    'printf %s "{{agent_1_result}}" | devbox shell',
]
COMMON = [
    "pnpm install",
    "pnpm build",
    "pnpm test",
    "pnpm run lint",
    "pnpm --filter web build",
    "pnpm -r test",
    "pnpm exec prettier --check .",
    "pnpm dlx create-vite app",
    "yarn exec tsc",
    "yarn install",
    "mise exec -- node -v",
    "mise install",
    "pixi run pytest -q",
    "devbox run test",
    "nix develop -c make",
    'pnpm exec eslint "{{agent_1_result}}"',
    'yarn exec eslint "{{agent_1_result}}"',
]


def _setup(where: Path, tool: str) -> None:
    (where / "package.json").write_text(json.dumps(PKG))
    if tool == "yarn":
        (where / "yarn.lock").write_text("")
        (where / ".yarnrc.yml").write_text("nodeLinker: node-modules\nenableTelemetry: false\n")


def _env(where: Path) -> dict[str, str]:
    path = ":".join(
        str(Path(p).parent) for p in {shutil.which(t) for t in ("mise", "pnpm", "yarn")} if p
    )
    return {
        "PATH": f"{path}:/usr/bin:/bin",
        "HOME": str(where),
        "npm_config_cache": str(where / ".npm"),
        "MISE_DATA_DIR": str(where / ".mise"),
    }


def _arguments(template: str, result: str | None = None) -> dict[str, object]:
    if result is None:
        return {"command": template}
    return rendered(template, result)


@pytest.mark.parametrize(("command", "tool"), IN_BASH)
def test_it_runs_touch_in_bash(command: str, tool: str, tmp_path: Path) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    _setup(tmp_path, tool)
    if tool == "yarn":
        bash("yarn install", _env(tmp_path), tmp_path, timeout=120)
    bash(command, _env(tmp_path), tmp_path, timeout=120)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", [c for c, _ in IN_BASH] + BY_DOCS)
def test_a_deny_rule_sees_the_line(command: str) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "deny" and decision.rule == "shell(touch:*)", decision.reason
    with read_as_of((0, 12, 4)):  # as 0.12.4 read it (a leader's replay keeps that)
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "allow"


@pytest.mark.parametrize(("template", "result", "tool"), VALUES)
def test_a_value_in_the_line_runs_and_is_asked_for(
    template: str, result: str, tool: str, tmp_path: Path
) -> None:
    arguments = _arguments(template, result)
    if shutil.which(tool) is not None:
        _setup(tmp_path, tool)
        bash(str(arguments["command"]), {**_env(tmp_path), **arguments["values"]}, tmp_path, 120)  # type: ignore[dict-item]
        assert (tmp_path / "ran").exists()
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "ask"


@pytest.mark.parametrize("template", PIPED)
def test_a_shell_started_with_no_command_reads_the_value(template: str) -> None:
    arguments = _arguments(template, "touch ran")
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "ask"
    with read_as_of((0, 12, 4)):
        assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"


@pytest.mark.parametrize("template", COMMON)
def test_common_calls_stay_allowed(template: str) -> None:
    arguments = _arguments(template, "src/app.ts" if "{{" in template else None)
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "allow", decision.reason


def test_the_leader_replays_the_reading_of_its_release() -> None:
    command = "pnpm touch ran"

    def decided() -> str:
        return decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect

    assert as_replayed(decided, lambda patch: True) == "deny"
    asked: list[str] = []
    assert as_replayed(decided, lambda patch: asked.append(patch) or False) == "allow"
    assert asked == ["shell-reading-round-14"]


def test_yarn_node_is_node(tmp_path: Path) -> None:
    # (sec14: Yarn 2+'s `yarn node -e CODE` ran CODE unasked, where `node -e CODE` is asked for)
    command = "yarn node -e \"require('child_process').execSync('touch ran')\""
    if shutil.which("yarn") is not None:
        _setup(tmp_path, "yarn")
        bash("yarn install", _env(tmp_path), tmp_path, timeout=120)
        bash(command, _env(tmp_path), tmp_path, timeout=120)
        assert (tmp_path / "ran").exists()
    assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "ask"
    with read_as_of((0, 12, 4)):
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "allow"
    for common in ("yarn node scripts/build.js", "yarn node --version", "yarn install"):
        assert decide("shell", {"command": common}, ROLE, DENY_TOUCH, "/ws").effect == "allow"


@pytest.mark.parametrize(
    "template",
    [
        'printf %s "{{agent_1_result}}" | uv run -',
        'printf %s "{{agent_1_result}}" | uv run --no-project -',
        'printf %s "{{agent_1_result}}" | python3 -m uv run -',
    ],
)
def test_uv_run_dash_reads_its_script_from_the_input(template: str, tmp_path: Path) -> None:
    # (sec14: `printf %s "{{…}}" | uv run -` ran the value as Python past deny shell(touch:*))
    arguments = _arguments(template, "import os; os.system('touch ran')")
    uv = shutil.which("uv")
    if uv is not None and "python3 -m" not in template:
        env = {**_env(tmp_path), "PATH": f"{Path(uv).parent}:/usr/bin:/bin"}
        bash(str(arguments["command"]), {**env, **arguments["values"]}, tmp_path, 120)  # type: ignore[dict-item]
        assert (tmp_path / "ran").exists()
    assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "ask"
    with read_as_of((0, 12, 4)):
        assert decide("shell", arguments, ROLE, DENY_TOUCH, "/ws").effect == "allow"
    for common in ('uv run tool.py "{{agent_1_result}}"', "uv run pytest -q -"):
        assert (
            decide("shell", _arguments(common, "a.txt"), ROLE, DENY_TOUCH, "/ws").effect == "allow"
        )


def test_npm_explore_runs_a_command_line(tmp_path: Path) -> None:
    # (sec14: npm explore PKG -- CMD runs CMD's words joined in a shell, in the package's folder)
    command = "npm explore lodash -- 'cd ../.. && touch ran'"
    if shutil.which("npm") is not None:
        _setup(tmp_path, "npm")
        (tmp_path / "node_modules" / "lodash").mkdir(parents=True)
        (tmp_path / "node_modules" / "lodash" / "package.json").write_text('{"name":"lodash"}')
        bash(command, _env(tmp_path), tmp_path, timeout=120)
        assert (tmp_path / "ran").exists()
    assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "deny"
    with read_as_of((0, 12, 4)):
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, "/ws").effect == "allow"
    piped = _arguments('printf %s "{{agent_1_result}}" | npm explore lodash', "touch ran")
    assert decide("shell", piped, ROLE, DENY_TOUCH, "/ws").effect == "ask"
    for common in ("npm explore lodash -- ls", "npm explore lodash -- npm run build"):
        assert decide("shell", {"command": common}, ROLE, DENY_TOUCH, "/ws").effect == "allow"
