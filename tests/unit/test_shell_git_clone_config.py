"""`git clone -c core.sshCommand=CMD` runs CMD as the clone connects: a model's own call ran touch
past deny shell(touch:*) unasked, where `git -c … clone` was asked (sec12). No connection is
made: the command runs in place of ssh."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.security.permissions import decide

RUNS = [
    "git clone -c core.sshCommand='touch ran' ssh://h/x d",
    "git clone --config core.sshCommand='touch ran' h:x d",
    "git clone --config=core.sshCommand='touch ran' h:x d",
    "git clone --conf core.sshCommand='touch ran' h:x d",
    # the shortest unique prefix git takes (`--c` is ambiguous: --config, --no-checkout)
    "git clone --co core.sshCommand='touch ran' h:x d",
    "git clone --co=core.sshCommand='touch ran' h:x d",
    "git clone -qc core.sshCommand='touch ran' h:x d",
    "git -C . clone -c core.sshCommand='touch ran' h:x d",
]


@pytest.mark.parametrize("command", RUNS)
def test_the_configuration_runs_the_program(command: str, tmp_path: Path) -> None:
    bash(command, {"HOME": str(tmp_path)}, tmp_path, timeout=20)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", RUNS)
def test_such_a_clone_is_asked_for(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "git clone --depth 1 h:x d",
        "git clone -b main h:x d",
        "git clone -bc h:x d",
        "git clone -- -c d",
    ],
)
def test_ordinary_clones_are_not(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason


# `git config KEY CMD` then a git command that runs it, in one command — a repository the
# command makes is not yet the one bound read-only in the sandbox (sec12)
@pytest.mark.parametrize(
    "command",
    [
        "git config -f x core.autocrlf input",  # another file's keys are not read
        "git config --global core.editor 'touch ran'",
        "git config --global core.hooksPath hooks",
        "git config --global credential.helper store",
        "git config core.autocrlfx 'touch ran'",
        "git config branch.main.x.remote origin",
        "git config --global safe.directory '*'",
    ],
)
def test_a_key_that_may_run_programs_is_still_asked_for(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason


CONFIGURED = [
    "git init -q r && git -C r config core.fsmonitor 'touch ../ran' && git -C r status",
    "git init -q r && git -C r config alias.x '!touch ../ran' && git -C r x",
    "git init -q r && git -C r config set core.fsmonitor 'touch ../ran' && git -C r status",
]


@pytest.mark.parametrize("command", CONFIGURED)
def test_the_configured_program_runs(command: str, tmp_path: Path) -> None:
    bash(command, {"HOME": str(tmp_path)}, tmp_path, timeout=20)
    if "config set" in command and not (tmp_path / "ran").exists():
        pytest.skip("this git has no `git config set`")
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("command", CONFIGURED)
def test_setting_such_a_key_is_asked_for(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "git config user.name x",
        "git config --get core.pager",
        "git config --list",
        "git config core.pager",
        # keys of data only, as a developer sets them (review15: asked since round 12)
        "git config core.autocrlf input",
        "git config --local core.filemode false",
        "git config --global push.autoSetupRemote true",
        "git config --global fetch.prune true",
        "git config --global rebase.autoStash true",
        "git config --global http.postBuffer 524288000",
        "git config branch.main.remote origin",
        "git config --global color.diff.meta yellow",
    ],
)
def test_reading_or_a_data_key_is_not(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason


# a template folder's hooks are the clone's: post-checkout runs as it checks out (review15)
TEMPLATE = (
    "git init -q s && git -C s commit -q --allow-empty -m x && "
    "mkdir -p t/hooks && printf '#!/bin/sh\\ntouch ran\\n' > t/hooks/post-checkout && "
    "chmod +x t/hooks/post-checkout && "
)
IDENTITY = {"NAME": "a", "EMAIL": "a@x"}
TEMPLATED = [TEMPLATE + "git clone -q --template=t s d", TEMPLATE + "git clone -q --templ t s d"]


@pytest.mark.parametrize("command", TEMPLATED)
def test_a_template_hook_runs(command: str, tmp_path: Path) -> None:
    who = {f"GIT_{w}_{k}": v for w in ("AUTHOR", "COMMITTER") for k, v in IDENTITY.items()}
    bash(command, {"HOME": str(tmp_path), **who}, tmp_path, timeout=20)
    assert (tmp_path / "d" / "ran").exists()


@pytest.mark.parametrize("command", [*TEMPLATED, "git init --template=t r"])
def test_a_template_is_asked_for(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
