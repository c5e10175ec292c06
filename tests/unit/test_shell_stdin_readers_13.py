"""A value piped to a program that runs what it reads, in the forms round 12 did not read (sec13:
`| python3 -m pdb tool.py` — pdb's commands are Python —, `| python3 -m cProfile /dev/stdin`,
`| python3 -Em code`, `| perl -d tool.pl`, `| node --title x`, `| tclsh -encoding utf-8`, `| npx
node`, `| npm exec -- node` each ran touch past deny shell(touch:*)). Judged by effect, in real
bash; the leader's replayed decisions keep 0.12.3's reading (patch shell-reading-round-13)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

PY = "import os; os.system('touch ran')"
JS = "require('child_process').execSync('touch ran')"
PL = 'system("touch ran");'
PIPE = "printf '%s\\n' \"{{agent_1_result}}\" | "
# (the plan's command, agent 1's result, the program it needs)
PIPED = [
    (PIPE + "python3 -m pdb tool.py", PY, "python3"),
    (PIPE + "python3 -m pdb -m json.tool", PY, "python3"),
    (PIPE + "python3 -m cProfile /dev/stdin", PY, "python3"),
    (PIPE + "python3 -m profile /dev/stdin", PY, "python3"),
    (PIPE + "python3 -m trace --count /dev/stdin", PY, "python3"),
    (PIPE + "python3 -Em code", PY, "python3"),
    (PIPE + "perl -d tool.pl", PL, "perl"),
    (PIPE + "node --title x", JS, "node"),
    (PIPE + "node -C x", JS, "node"),
    (PIPE + "node --unhandled-rejections strict", JS, "node"),
    (PIPE + "tclsh -encoding utf-8", "exec touch ran", "tclsh"),
    (PIPE + "npx node", JS, "npx"),
    (PIPE + "npm exec -- node", JS, "npm"),
]


def _rendered(template: str, result: str) -> tuple[str, dict[str, str]]:
    return render_command(template, {"1": result}, {}, {})


@pytest.mark.parametrize(("template", "result", "program"), PIPED)
def test_the_value_runs_there(template: str, result: str, program: str, tmp_path: Path) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")
    (tmp_path / "tool.py").write_text("print('the script ran')\n")
    (tmp_path / "tool.pl").write_text("print 1;\n")
    command, values = _rendered(template, result)
    bash(command, {**values, "PERLDB_OPTS": "", "HOME": str(tmp_path)}, tmp_path, timeout=30)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result", "program"), PIPED)
def test_a_command_piping_a_value_there_is_asked_for(
    template: str, result: str, program: str, tmp_path: Path
) -> None:
    command, values = _rendered(template, result)
    arguments = {"command": command, "values": values}
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    assert "reads its commands from its input" in decision.reason
    with read_as_of((0, 12, 3)):  # as 0.12.3 read it: allowed (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


@pytest.mark.parametrize(
    "template",
    [
        PIPE + "python3 -m cProfile tool.py",
        PIPE + "python3 -Bm json.tool",
        PIPE + "python3 -I tool.py",  # (-I isolates python; ruby's and perl's -I take a value)
        PIPE + "perl -d:NYTProf tool.pl",
        PIPE + "node --no-warnings app.js",
        PIPE + "node --title x app.js",
        PIPE + "tclsh -encoding utf-8 count.tcl",
        PIPE + "npx prettier --stdin-filepath x.js",
        PIPE + "npm exec -- prettier --stdin-filepath x.js",
        PIPE + "uv run python tool.py",
        PIPE + "poetry run python tool.py",
    ],
)
def test_a_program_reading_its_script_from_a_file_is_allowed(template: str, tmp_path: Path) -> None:
    command, values = _rendered(template, "x")
    decision = decide("shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, "/ws")
    assert decision.effect == "allow", decision.reason
