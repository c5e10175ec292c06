"""An interpreter's options end at its script or module: the words after are the script's own
(`python3 tool.py -c config.yml`, `python3 -m pytest -x`, `python3 -m pip install -r req.txt`,
`node app.js -e production`, `perl tool.pl -e x` were asked for as code given in the
arguments — 12 of 84 common commands, sec13); code given before the script still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of


@pytest.mark.parametrize(
    "command",
    [
        "python3 tool.py -c config.yml",
        "python3 tool.py -e prod",
        "python3 tool.py -r 3",
        "python3 tool.py -x",
        "python3 -u tool.py -c x",
        "python3 -W ignore tool.py -c x",
        "python3 -m pytest -x",
        "python3 -m pytest -q tests -p no:cacheprovider",
        "python3 -m pip install -r requirements.txt",
        "python3 -m pip install -e .",
        "cat requirements.txt | python3.11 -m pip install -r /dev/stdin",
        "node app.js -e production",
        "node server.js -p 3000",
        "node --title x app.js -e y",
        "ruby script.rb -e x",
        "perl script.pl -e x",
    ],
)
def test_the_scripts_own_words_are_not_its_interpreters(command: str, tmp_path: Path) -> None:
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it: asked (a leader's replay keeps that)
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path)).effect == (
            "ask"
        )


@pytest.mark.parametrize(
    "command",
    [
        "python3 -c \"import os; os.system('touch ran')\"",
        "python3 -B -c \"import os; os.system('touch ran')\"",
        "python3 -W ignore -c \"import os; os.system('touch ran')\"",
        "python3 -X dev -Bc \"import os; os.system('touch ran')\"",
        "perl -I lib -e 'system q(touch ran)'",
        "perl -Mstrict -e 'system q(touch ran)'",
        "node --title x -e \"require('child_process').execSync('touch ran')\"",
        "node -r fs -e \"require('child_process').execSync('touch ran')\"",
    ],
)
def test_code_given_before_the_script_is_asked_for(command: str, tmp_path: Path) -> None:
    bash(command, {}, tmp_path, timeout=20)
    assert (tmp_path / "ran").exists()
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
