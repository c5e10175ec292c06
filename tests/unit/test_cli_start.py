"""The command line imports what the command given needs, and nothing it does not: the table
of commands is what the modules register, and quick commands stay clear of Temporal's client,
the MCP SDK and the leader's code."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import COMMANDS, SUMMARIES, build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_the_table_is_what_each_module_registers_in_the_order_help_lists() -> None:
    registered: dict[str, str] = {}
    for module in dict.fromkeys(COMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"cli.{module}").register(sub)
        registered.update(dict.fromkeys(sub.choices, module))
    assert registered == COMMANDS
    assert list(registered) == list(COMMANDS)


def test_the_summaries_help_shows_are_what_each_module_registers() -> None:
    said: dict[str, str | None] = {}
    for module in dict.fromkeys(COMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"cli.{module}").register(sub)
        said.update({a.dest: a.help for a in sub._choices_actions})
    assert said == SUMMARIES
    assert list(said) == list(SUMMARIES) == list(COMMANDS)
    # and the help built from them is the whole parser's, word for word
    assert build_parser(summaries=True).format_help() == build_parser().format_help()


@pytest.mark.parametrize("argv", [["--help"], [], ["staus"], ["-h", "status"], ["--hel", "status"]])
def test_help_no_command_and_a_misspelt_one_import_no_commands_module(
    argv: list[str], tmp_path: Path
) -> None:
    # The first thing a newcomer types: answered from the summaries, not by importing every
    # command (Temporal's client, the MCP SDK: ~0.3 s).
    modules = _modules_after(argv, tmp_path)
    assert not {m for m in modules if m.startswith("cli.") and m.endswith("_cmd")}
    assert not {m for m in modules if m.startswith("temporalio")}
    assert not _heavy(modules)


def test_a_command_given_builds_its_own_parser_and_no_other() -> None:
    parser = build_parser("validate")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == ["validate"]
    sub = next(a for a in build_parser(None)._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS)


def _modules_after(argv: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> set[str]:
    return set(json.loads(_after(argv, tmp_path, "print(json.dumps(sorted(sys.modules)))\n", env)))


def _after(argv: list[str], tmp_path: Path, report: str, env: dict[str, str] | None = None) -> str:
    """The last line ``report`` (Python) prints in a new process, after ``starter.py argv``."""
    code = (
        "import sys, json\n"
        "from cli.main import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"{report}"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "XSKY_HOME": str(tmp_path / "x"),
            **(env or {}),
        },
    )
    # (Not the exit status: a command that talked to no server may still crash as the process
    # ends, in the SDK's runtime thread, after its report was printed.)
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-2000:]
    return lines[-1]


def _heavy(modules: set[str]) -> set[str]:
    return {
        m
        for m in modules
        # (jsonschema: only a plan with an output schema needs it, ~60 ms of start-up)
        if m.split(".")[0] in ("mcp", "workflows", "bashlex", "jsonschema")
        or m in ("temporalio.worker", "xsky.leader.core", "client.skills")
    }


def test_validate_imports_neither_temporal_nor_the_leader(tmp_path: Path) -> None:
    plan = tmp_path / "p.xml"
    plan.write_text('<workflow name="w"><agent name="llm" id="1"><task>t</task></agent></workflow>')
    modules = _modules_after(["validate", str(plan)], tmp_path)
    assert "xsky.plan.xml" in modules  # it did its work
    assert not {m for m in modules if m.startswith("temporalio")}
    assert not _heavy(modules)


def test_validate_imports_no_event_loop_and_the_settings_no_transcript_adapters(
    tmp_path: Path,
) -> None:
    # asyncio is for a plan that calls an MCP tool; the settings files name transcript
    # source kinds (xsky.skills.kinds), not the adapters and their redaction patterns.
    plan = tmp_path / "p.xml"
    plan.write_text('<workflow name="w"><agent name="llm" id="1"><task>t</task></agent></workflow>')
    modules = _modules_after(["validate", str(plan)], tmp_path)
    assert "xsky.settings_files" in modules  # it read the settings
    assert "asyncio" not in modules
    assert not {
        m for m in modules if m.startswith(("xsky.skills.transcripts", "xsky.security.redact"))
    }


def test_validate_imports_no_temporal_where_the_address_is_set(tmp_path: Path) -> None:
    # A deployment sets TEMPORAL_ADDRESS (docker-compose, a worker's host): validate, which
    # never connects, read it through the SDK's envconfig and so imported Temporal (~0.2 s).
    plan = tmp_path / "p.xml"
    plan.write_text('<workflow name="w"><agent name="llm" id="1"><task>t</task></agent></workflow>')
    env = {"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_NAMESPACE": "default"}
    modules = _modules_after(["validate", str(plan)], tmp_path, env)
    assert "xsky.plan.xml" in modules
    assert not {m for m in modules if m.startswith("temporalio")}


@pytest.mark.parametrize("argv", [["status", "nope"], ["list"]])
def test_status_and_list_need_temporals_client_and_nothing_heavier(
    argv: list[str], tmp_path: Path
) -> None:
    modules = _modules_after(argv, tmp_path)
    assert "temporalio.client" in modules
    assert not _heavy(modules)


def test_validate_builds_few_of_the_models_it_imports(tmp_path: Path) -> None:
    # A model's validator is built on first use (xsky/wire.py): most of the ~140 are never
    # used by a quick command, and building them all took ~120 ms of its start-up.
    plan = tmp_path / "p.xml"
    plan.write_text('<workflow name="w"><agent name="llm" id="1"><task>t</task></agent></workflow>')
    report = (
        "from xsky.wire import wire_models\n"
        "found = wire_models()\n"
        "print(sum(m.__pydantic_complete__ for m in found), len(found))\n"
    )
    built, imported = map(int, _after(["validate", str(plan)], tmp_path, report).split())
    assert imported >= 40 and built <= imported // 4, (built, imported)


def test_the_tools_argument_models_wait_to_be_built_and_all_build() -> None:
    # A fresh process: built when first used (a command importing the tool table builds none),
    # and every one builds, as a worker builds them all before it serves.
    report = (
        "from xsky.security.tools import TOOLS, build_argument_models\n"
        "waiting = sum(not s.args.__pydantic_complete__ for s in TOOLS.values())\n"
        "built = build_argument_models()\n"
        "print(waiting, built, len(TOOLS), all(s.args.__pydantic_complete__ for s in TOOLS.values()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", report], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    waiting, built, tools, complete = done.stdout.split()
    assert waiting == built == tools and complete == "True", done.stdout + done.stderr
