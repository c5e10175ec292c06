"""A command run by a real bash, as the shell tool runs one: the shell checker's tests judge an
attack by its effect — a canary file in a temp folder, a line on stderr — never by the
checker's word alone (harmless if the attack succeeds: it only touches the temp folder)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from xsky.plan.variables import render_command
from xsky.security.permissions import PermissionLayer, PermissionSettings
from xsky.security.roles import BUILTIN_ROLES

# What every effect test decides against: a role holding shell, and a deny rule whose program
# (touch) is the canary — a call that runs touch past it is a bypass.
ROLE = BUILTIN_ROLES["shell"]
DENY_TOUCH = PermissionSettings(
    layers=[PermissionLayer(scope="user", path="settings.json", deny=["shell(touch:*)"])]
)


def bash(
    command: str, env: dict[str, str], where: Path | None = None, timeout: float = 20.0
) -> subprocess.CompletedProcess[str]:
    """``command`` run by ``bash -c`` in ``where`` with ``env`` (and a plain PATH), its output
    kept, nothing on its stdin."""
    return subprocess.run(
        ["bash", "-c", command],
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=where,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def rendered(template: str, result: str) -> dict[str, object]:
    """A shell call's arguments as the leader makes them: ``template``'s ``{{agent_1_result}}``
    given ``result``, which travels beside the command as a value (never pasted into it)."""
    command, values = render_command(template, {"1": result}, {}, {})
    return {"command": command, "values": values}


def run_rendered(arguments: dict[str, object], where: Path) -> subprocess.CompletedProcess[str]:
    """``arguments`` (:func:`rendered`) run by bash in ``where``, as the shell tool runs them:
    each value in its variable, ``where`` the home too (as the sandbox makes the workspace)."""
    values: dict[str, str] = arguments.get("values", {})  # type: ignore[assignment]
    return bash(str(arguments["command"]), {"HOME": str(where), **values}, where)
