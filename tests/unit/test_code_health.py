"""The code is linted, formatted and type-checked as pyproject.toml configures.

ruff (lint rules and formatting) over the whole project, mypy over the packages and entry
points it lists in ``[tool.mypy] files``. Each runs as the installed tool would from the
command line, with this interpreter, and a failure shows the tool's own report. mypy keeps its
incremental cache in .mypy_cache, so after the first run only changed modules are re-checked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def report(done: subprocess.CompletedProcess[str]) -> str:
    return (
        f"{' '.join(map(str, done.args[2:]))} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    )


def test_ruff_finds_no_lint_problems():
    done = run("ruff", "check", "--no-fix", "--output-format", "concise", ".")
    assert done.returncode == 0, report(done)


def test_the_code_is_formatted_as_ruff_format_leaves_it():
    done = run("ruff", "format", "--check", ".")
    assert done.returncode == 0, report(done)


def test_mypy_finds_no_type_errors():
    done = run("mypy")
    assert done.returncode == 0, report(done)
