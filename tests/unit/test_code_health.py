"""The code is linted, formatted and type-checked as pyproject.toml configures.

ruff (lint rules and formatting) over the whole project, mypy over the packages and entry
points it lists in ``[tool.mypy] files``. Each runs as the installed tool would from the
command line, with this interpreter, and a failure shows the tool's own report. mypy keeps its
incremental cache outside the checkout (:func:`mypy_cache`), so a fresh clone re-checks only what
differs from the last checkout checked, not every module and every package it imports.
"""

from __future__ import annotations

import fcntl
import os
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


def mypy_cache() -> Path:
    """mypy's incremental cache, one for every checkout of this user (XSKY_MYPY_CACHE, else
    ``~/.cache/xsky/mypy``): mypy takes a module's entry only while its source's hash and its
    dependencies' interfaces are unchanged, so a checkout with other code is checked as an edit
    would be — what it changed and what depends on it. A cold check of every module and of the
    packages they import took ~40 s of a CI run (100 s on a loaded machine), a clone's first
    check with another checkout's cache ~15 s. The checkout's own .mypy_cache when no home
    cache can be made."""
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    cache = Path(os.environ.get("XSKY_MYPY_CACHE") or Path(home) / "xsky" / "mypy")
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        cache = ROOT / ".mypy_cache"
        cache.mkdir(exist_ok=True)
    return cache


@pytest.mark.timeout(600)  # a cold mypy (no cache at all) on two busy cores
def test_mypy_finds_no_type_errors():
    cache = mypy_cache()
    # One mypy at a time per cache (another checkout's tests may be checking too).
    with open(cache / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = run("mypy", "--cache-dir", str(cache))
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


def test_the_pure_core_contracts_hold_the_whole_of_xsky_under_every_other_layer():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    listed = [set(c["source_modules"]) for c in config["contracts"] if c["type"] == "forbidden"]
    # all of xsky/, not a list of its modules that a new one could be missing from
    assert listed and all(sources == {"xsky"} for sources in listed)
    (layers,) = [
        c["layers"] for c in config["contracts"] if c["type"] == "layers" and "containers" not in c
    ]
    assert layers[-1] == "xsky" and set(config["root_packages"]) == {
        name.strip() for layer in layers for name in layer.split("|")
    }


def test_an_upward_import_and_a_circle_in_the_client_break_their_contracts(tmp_path: Path):
    """The contracts are not vacuous: a core module that imports a workflow, and a client module
    that imports one that imports it, checked with the same pyproject, are reported (a copy of
    the packages, so the checkout is untouched)."""
    import shutil

    for name in ("xsky", "workflows", "activities", "client", "cli"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    runs = tmp_path / "xsky" / "runs.py"
    runs.write_text(runs.read_text() + "\nfrom workflows.leader import io  # upward\n")
    steer = tmp_path / "client" / "steer.py"  # client/run.py imports it
    steer.write_text(steer.read_text() + "\nfrom client import run  # a circle\n")
    done = lint_imports(tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert "xsky.runs -> workflows.leader.io" in done.stdout
    assert "No cycles are allowed in client" in done.stdout and ".steer -> .run" in done.stdout


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


# -- one concept per module, named for it (DESIGN.md, "Style") -------------------------------------
#
# A module is as long as its concept needs: there is no line cap (a cap makes modules split or
# merged for size). What a machine can check is that each module says what its one thing is.

# Names that name no concept: a module called so holds whatever had no home.
GRAB_BAG_NAMES = frozenset({"utils", "util", "helpers", "helper", "misc", "common", "stuff"})


def production_modules() -> list[Path]:
    """The modules mypy checks (``[tool.mypy] files``): every package and entry point."""
    import tomllib

    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    found: list[Path] = []
    for name in files:
        path = ROOT / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in found if "__pycache__" not in p.parts]


def first_sentence(docstring: str) -> str:
    """The docstring's first sentence, on one line: up to the first full stop that ends one."""
    import re

    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    end = re.search(r"(?<!\be\.g)(?<!\bi\.e)\.(?=\s|$)", paragraph)
    return paragraph[: end.start()] if end else paragraph


def _top_level(text: str, separators: tuple[str, ...]) -> list[str]:
    """``text`` cut at each separator that stands outside brackets, quotes and backticks."""
    parts, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(text):
        if text[i] == "`":
            quoted = not quoted
        elif not quoted and text[i] in "([{":
            depth += 1
        elif not quoted and text[i] in ")]}":
            depth -= 1
        elif not quoted and depth == 0:
            sep = next((s for s in separators if text.startswith(s, i)), None)
            if sep is not None:
                parts.append(text[start:i])
                start = i = i + len(sep)
                continue
        i += 1
    return [*parts, text[start:]]


def names_a_list(sentence: str) -> bool:
    """Does the sentence open with a list of things (``run``, ``status``, ``list``: …) rather than
    the name of one? Its head — what stands before a colon, a dash or a semicolon — is a list
    when it is three or more items of at most three words each."""
    head = _top_level(sentence, (": ", " — ", "; "))[0]
    items = [
        item.strip().removeprefix("and ").removeprefix("or ") for item in _top_level(head, (", ",))
    ]
    return len(items) >= 3 and all(len(item.split()) <= 3 for item in items)


@pytest.mark.parametrize(
    ("sentence", "a_list"),
    [
        ("``run``, ``status``, ``result``, ``list``: starting runs and looking at them", True),
        ("Parsing, rendering and caching", False),  # two items: a name with an 'and'
        ("Parsing, rendering, and caching plans", True),
        ("Text from agents, pages, plans and logs made safe to show", False),
        ("Runs on the command line: ``run``, ``status``, ``result``, ``list``", False),
        ("The plan as a graph: validation, ready sets, orders, levels, critical path", False),
        ("Budgets, as people write them and as the run counts them (pure)", False),
    ],
)
def test_a_first_sentence_that_opens_with_a_list_is_told_from_one_that_names_a_thing(
    sentence: str, a_list: bool
):
    assert names_a_list(sentence) is a_list


def test_every_module_opens_with_a_docstring_that_names_its_one_thing():
    import ast

    problems = []
    for path in production_modules():
        where = path.relative_to(ROOT)
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if not docstring or not first_sentence(docstring):
            problems.append(
                f"{where}: no docstring; say why the module exists, naming its one thing"
            )
        elif names_a_list(first_sentence(docstring)):
            problems.append(
                f"{where}: its docstring opens with a list ({first_sentence(docstring)[:80]!r}); "
                "name the one thing the module holds first (split the module if it holds several)"
            )
    assert not problems, "\n".join(problems)


def test_no_module_is_named_for_no_concept():
    bags = [str(p.relative_to(ROOT)) for p in production_modules() if p.stem in GRAB_BAG_NAMES]
    assert not bags, f"modules named for no concept: {bags}; name each for what it holds"
