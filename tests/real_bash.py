"""A command run by a real bash, as the shell tool runs one: the shell checker's tests judge an
attack by its effect — a canary file in a temp folder, a line on stderr — never by the
checker's word alone (harmless if the attack succeeds: it only touches the temp folder)."""

from __future__ import annotations

import subprocess
from pathlib import Path


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
