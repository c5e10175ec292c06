"""A command's own --help opens with what the command does (walk12: `starter.py budget --help`
and every other command's showed their arguments only; the line saying what each does was in
the top level's `starter.py --help` alone)."""

from __future__ import annotations

import contextlib
import io

import pytest

from cli.main import COMMANDS, SUMMARIES, build_parser


def _help(command: str) -> str:
    said = io.StringIO()
    with contextlib.redirect_stdout(said), pytest.raises(SystemExit):
        build_parser(command).parse_args([command, "--help"])
    return " ".join(said.getvalue().split())


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_commands_help_says_what_it_does_under_its_usage(command: str) -> None:
    said = _help(command)
    summary = " ".join(SUMMARIES[command].split())
    assert summary in said
    # under the usage, before the arguments
    assert said.index(summary) < said.index("-h, --help")
