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
