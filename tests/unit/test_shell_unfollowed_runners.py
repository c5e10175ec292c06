"""Programs that run the command they are given, which the checker does not unwrap, are asked
for (a fourth review: each ran `touch` past `deny shell(touch:*)` for a role holding shell) —
the dynamic loader called by its path among them (`/lib64/ld-linux-x86-64.so.2 /usr/bin/touch`)."""

from __future__ import annotations

import pytest

from tests.real_bash import DENY_TOUCH
from xsky.security.permissions import decide
from xsky.security.roles import BUILTIN_ROLES


@pytest.mark.parametrize(
    "command",
    [
        "/lib64/ld-linux-x86-64.so.2 /usr/bin/touch ran",
        "valgrind -q touch ran",
        "perf stat touch ran",
        "sg root -c 'touch ran'",
        "tmux new -d 'touch ran'",
        "ssh-agent touch ran",
        "faketime 2020-01-01 touch ran",
        "setarch x86_64 touch ran",  # (util-linux, on every Linux: each ran touch unasked)
        "linux64 touch ran",
        "x86_64 touch ran",
        "runcon -t unconfined_t touch ran",
    ],
)
def test_a_runner_the_checker_does_not_follow_is_asked_for(command: str) -> None:
    decision = decide("shell", {"command": command}, BUILTIN_ROLES["shell"], DENY_TOUCH, "/ws")
    assert decision.effect != "allow", decision.reason


def test_ordinary_commands_stay_allowed() -> None:
    for command in ("ls -la", "git status", "python3 -m pytest -q", "timeout 5 ls"):
        decision = decide("shell", {"command": command}, BUILTIN_ROLES["shell"], DENY_TOUCH, "/ws")
        assert decision.effect == "allow", (command, decision.reason)


@pytest.mark.parametrize(
    "command",
    [
        "npx -c 'touch ran'",
        "npm exec -c 'touch ran'",
        "nix-shell --run 'touch ran'",
        "git submodule foreach 'touch ran'",
        # (review13, each ran touch in bash: npm takes the last -c, reads `--c` and `-c=` as
        # --call, `x` and `exe` as exec, global options before it; git's own before submodule)
        "npx -c 'echo hi' -c 'touch ran'",
        "npx --call 'echo hi' -c 'touch ran'",
        "npm exec -c 'echo hi' --call='touch ran'",
        "npm x -c 'touch ran'",
        "npm exe -c 'touch ran'",
        "npm --yes exec -c 'touch ran'",
        "npm --prefix . x -c 'touch ran'",
        "npm exec -c='touch ran'",
        "npm exec --c 'touch ran'",
        "git submodule --quiet foreach 'touch ran'",
        "git -C . submodule foreach 'touch ran'",
        "git --no-pager submodule foreach 'touch ran'",
    ],
)
def test_a_command_line_a_package_tool_runs_is_checked_as_the_command_it_is(command: str) -> None:
    decision = decide("shell", {"command": command}, BUILTIN_ROLES["shell"], DENY_TOUCH, "/ws")
    assert decision.effect != "allow", decision.reason


def test_a_package_tools_ordinary_commands_stay_allowed() -> None:
    for command in (
        "poetry run pytest -q",
        "uv run python -m build",
        "npx prettier --check .",
        "npm test",
    ):
        decision = decide("shell", {"command": command}, BUILTIN_ROLES["shell"], DENY_TOUCH, "/ws")
        assert decision.effect == "allow", (command, decision.reason)


@pytest.mark.parametrize(
    "command",
    [  # (review13: each ran touch in bash, in a repository with two commits, unasked)
        "git rebase -x 'touch ran' HEAD~1",
        "git rebase --exec='touch ran' HEAD~1",
        "git rebase --exe 'touch ran' HEAD~1",  # (git reads a long option by a unique prefix)
        "git rebase -x'touch ran' HEAD~1",
        "git -C . rebase -x 'touch ran' HEAD~1",
        "git bisect run touch ran",
        "git difftool -y -x 'touch ran' HEAD~1",
        "git difftool -y --extcmd='touch ran' HEAD~1",
        "git filter-branch -f --tree-filter 'touch ran' HEAD",
        "git fetch --upload-pack='touch ran; git-upload-pack' .",
        "git ls-remote --upload-pack='touch ran; git-upload-pack' .",
        "git archive --remote=. --exec='touch ran; git-upload-archive' HEAD",
    ],
)
def test_a_command_line_a_git_option_runs_is_checked_as_the_command_it_is(command: str) -> None:
    decision = decide("shell", {"command": command}, BUILTIN_ROLES["shell"], DENY_TOUCH, "/ws")
    assert decision.effect != "allow", decision.reason


def test_gits_ordinary_commands_stay_allowed() -> None:
    for command in (
        "git rebase -x 'make test' HEAD~1",
        "git rebase -i HEAD~1",
        "git fetch origin",
        "git push origin main",
        "git log --oneline -x",
        "git bisect run make test",
    ):
        decision = decide("shell", {"command": command}, BUILTIN_ROLES["shell"], DENY_TOUCH, "/ws")
        assert decision.effect == "allow", (command, decision.reason)
