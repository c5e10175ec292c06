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

import pytest

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


@pytest.mark.timeout(600)  # a cold mypy (fresh clone, no cache) on two busy cores
def test_mypy_finds_no_type_errors():
    done = run("mypy")
    assert done.returncode == 0, report(done)


def lint_imports(
    where: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages in ``where`` (with the pyproject there)."""
    script = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(script), "--no-cache"], cwd=where, capture_output=True, text=True, timeout=300, env=env
    )


def test_the_layer_contracts_of_pyproject_hold():
    done = lint_imports()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_pure_core_contract_names_every_module_of_xsky_but_the_client():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    listed = [set(c["source_modules"]) for c in config["contracts"] if c["type"] == "forbidden"]
    children = {
        f"xsky.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "xsky").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert listed and all(sources == children - {"xsky.client"} for sources in listed)


def test_an_upward_import_breaks_a_contract(tmp_path: Path):
    """The contracts are not vacuous: a core module that imports a workflow, checked with the
    same pyproject, is reported (a copy of the packages, so the checkout is untouched)."""
    import shutil

    for name in ("xsky", "workflows", "activities", "cli"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    runs = tmp_path / "xsky" / "runs.py"
    runs.write_text(runs.read_text() + "\nfrom workflows.leader import io  # upward\n")
    done = lint_imports(tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert "xsky.runs -> workflows.leader.io" in done.stdout


def test_the_worker_imports_no_cli():
    import ast

    tree = ast.parse((ROOT / "worker.py").read_text())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not {m for m in imported if m and (m == "cli" or m.startswith(("cli.", "starter")))}
