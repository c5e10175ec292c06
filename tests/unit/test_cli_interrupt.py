"""Ctrl-C at the command line: one line saying what goes on and how to see it again, exit 130
— never a traceback, whenever it comes."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import cli.main
from cli.main import main


def _interrupt(*_: object, **__: object) -> argparse.ArgumentParser:
    raise KeyboardInterrupt


def test_ctrl_c_while_the_command_line_is_read_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Building the parser imports the command's module: half a second a Ctrl-C may land in.
    monkeypatch.setattr(cli.main, "build_parser", _interrupt)
    assert main(["status", "xsky-some-run"]) == 130
    said = capsys.readouterr()
    assert said.err == "interrupted\n"
    assert said.out == ""


def test_the_command_line_is_read_where_ctrl_c_is_answered() -> None:
    # cli.main itself stays quick to import (rich is imported with a command, not with it):
    # a Ctrl-C before `main` runs could not be answered at all.
    code = "import sys, cli.main; print('cli.render' in sys.modules, 'rich' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


# A steering command that waits on its update when Ctrl-C comes: asyncio.run cancels it, and
# Temporal's client raises its own error from the CancelledError. Run in a process of its own,
# with a real SIGINT, as a person's Ctrl-C would come. Python leaves SIGINT ignored when it
# starts with it ignored (a suite started in the background: `make test &`, some CI runners),
# and then nothing cancels the wait: Ctrl-C is given its handler back, as a terminal has it.
_STEER_INTERRUPTED = """
import asyncio, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
import cli.steer_cmd
from cli.main import main

async def connect(*_, **__):
    try:
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(30)
    except asyncio.CancelledError as err:
        raise WorkflowUpdateRPCTimeoutOrCancelledError() from err

cli.steer_cmd.XSky.connect = connect
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("argv", "check"),
    [
        (["pause", "xsky-r-1"], "`starter.py status xsky-r-1` shows whether it did"),
        (["nudge", "xsky-r-1", "T-2", "hi"], "`starter.py status xsky-r-1` shows whether it did"),
    ],
)
def test_ctrl_c_while_an_update_waits_says_it_may_still_apply(argv: list[str], check: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _STEER_INTERRUPTED, *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == f"interrupted; what was sent may still apply: {check}\n"


def test_an_update_the_server_did_not_answer_in_time_is_a_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
    from temporalio.service import RPCError, RPCStatusCode

    import cli.steer_cmd

    async def connect(*_: object, **__: object) -> None:
        late = RPCError("deadline exceeded", RPCStatusCode.DEADLINE_EXCEEDED, b"")
        raise WorkflowUpdateRPCTimeoutOrCancelledError() from late

    monkeypatch.setattr(cli.steer_cmd.XSky, "connect", connect)
    assert main(["resume", "xsky-r-1"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert (
        "error: the server did not answer in time; what was sent may still apply: "
        "`starter.py status xsky-r-1` shows whether it did" in said
    )


@pytest.mark.parametrize(
    ("argv", "again"),
    [
        (["events", "xsky-r-1", "--follow"], "starter.py events xsky-r-1 --follow"),
        (["log", "xsky-r-1", "T-1", "--follow"], "starter.py log xsky-r-1 T-1 --follow"),
        (
            ["log", "xsky-r-1", "--json", "3", "--follow"],
            "starter.py log xsky-r-1 3 --follow --json",
        ),
        (["events", "xsky-r-1"], "starter.py events xsky-r-1"),
    ],
)
def test_ctrl_c_on_events_or_a_log_names_the_same_command_to_see_it_again(
    argv: list[str], again: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # (`follow RUN` shows the task board: not the lines that were being followed)
    import importlib

    module = importlib.import_module(f"cli.{cli.main.COMMANDS[argv[0]]}")

    async def connect(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(module.XSky, "connect", connect)
    assert main(argv) == 130
    assert capsys.readouterr().err == f"interrupted; the run goes on: see it again with `{again}`\n"
