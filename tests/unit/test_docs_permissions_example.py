"""The docs' `permissions check` example (docs/permissions.md) shows what the command truly
prints, with the settings the page shows just above it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "permissions.md").read_text(encoding="utf-8")
SHOWN_PATH = "/home/you/.xsky/settings.json"


def test_the_docs_example_is_the_commands_true_output(tmp_path: Path):
    checker = PAGE[PAGE.index("### The checker") :]
    settings = json.loads(re.search(r"```json\n(.*?)```", checker, re.S)[1])  # type: ignore[index]
    example = re.search(
        r"```text\n\$ python starter\.py (permissions check .*?)\n(.*?)```", checker, re.S
    )
    assert example, "docs/permissions.md's permissions check example is gone"
    command, shown = example[1], example[2]
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    done = subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), *shlex.split(command)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "XSKY_USER_SETTINGS": str(path)},
    )
    assert done.returncode == 0, done.stderr
    # (the console wraps long lines at its width: compared word for word)
    assert done.stdout.replace(str(path), SHOWN_PATH).split() == shown.split()
    # and the sentence after it: without the deny rule, the role alone allows the call
    settings["permissions"]["deny"] = []
    path.write_text(json.dumps(settings))
    done = subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), *shlex.split(command)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "XSKY_USER_SETTINGS": str(path)},
    )
    assert (
        done.stdout.startswith("ALLOW")
        and "role backend lists shell in allowedTools" in done.stdout
    )
