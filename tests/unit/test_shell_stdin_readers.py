"""A value piped to a program that runs what it reads is code there, however the program or its
input is named (sec12: `printf %s "{{…}}" | python3.11`, `| perl5.36.0`, `| bash //dev/stdin`,
`| python3 /proc/thread-self/fd/0`, `| make -f -`, `| jshell`, `| tclsh8.6`, `| python3 -m
code`, `| python3 --check-hash-based-pycs never` each ran touch past deny shell(touch:*), after
0.12.2 asked for `| python3` and `| bash /dev/stdin`). Judged by effect, in real bash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide
from xsky.security.shell_parse import read_as_of

PY = "import os; os.system('touch ran')"
MAKE = "all:\n\ttouch ran\n"
# (the plan's command, agent 1's result, the program it needs)
PIPED = [
    ("printf '%s' \"{{agent_1_result}}\" | python3.11", PY, "python3.11"),
    ("printf '%s' \"{{agent_1_result}}\" | perl5.36.0", 'system("touch ran")', "perl5.36.0"),
    ("printf '%s' \"{{agent_1_result}}\" | bash //dev/stdin", "touch ran", "bash"),
    ("printf '%s' \"{{agent_1_result}}\" | bash /dev/./stdin", "touch ran", "bash"),
    ("printf '%s' \"{{agent_1_result}}\" | bash ../../../../../../dev/stdin", "touch ran", "bash"),
    ("printf '%s' \"{{agent_1_result}}\" | python3 /proc/thread-self/fd/0", PY, "python3"),
    ("printf '%s' \"{{agent_1_result}}\" | python3 --check-hash-based-pycs never", PY, "python3"),
    ("printf '%s' \"{{agent_1_result}}\" | python3 -m code", PY, "python3"),
    # -i: the REPL reads the input after the script has run (review15)
    ("printf '%s' \"{{agent_1_result}}\" | python3 -i tool.py", PY, "python3"),
    ("printf '%s' \"{{agent_1_result}}\" | python3 -qi tool.py", PY, "python3"),
    ("printf '%s' \"{{agent_1_result}}\" | make -f -", MAKE, "make"),
    ("printf '%s' \"{{agent_1_result}}\" | make -sf /dev/stdin", MAKE, "make"),
    # --f is --file: make takes any unique prefix (review15)
    ("printf '%s' \"{{agent_1_result}}\" | make --f -", MAKE, "make"),
    ("printf '%s' \"{{agent_1_result}}\" | make --f=-", MAKE, "make"),
    ("printf '%s' \"{{agent_1_result}}\" | tclsh8.6", "exec touch ran", "tclsh8.6"),
]


def needs(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")


@pytest.mark.parametrize(("template", "result", "program"), PIPED)
def test_the_value_runs_there(template: str, result: str, program: str, tmp_path: Path) -> None:
    needs(program)
    (tmp_path / "tool.py").write_text("print('the script ran')\n")  # (python3 -i tool.py)
    command, values = render_command(template, {"1": result}, {}, {})
    bash(command, values, tmp_path, timeout=20)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result", "program"), PIPED)
def test_a_command_piping_a_value_there_is_asked_for(
    template: str, result: str, program: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    arguments = {"command": command, "values": values}
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason
    assert "reads its commands from its input" in decision.reason
    with read_as_of((0, 12, 2)):  # as 0.12.2 read it: allowed (a leader's replay keeps that)
        assert decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"


@pytest.mark.parametrize(
    "template",
    [
        'python3.11 tool.py "{{agent_1_result}}"',
        "printf '%s' \"{{agent_1_result}}\" | python3.11 tool.py",
        "printf '%s' \"{{agent_1_result}}\" | bash ./count.sh",
        "printf '%s' \"{{agent_1_result}}\" | make -f Makefile lint",
        "printf '%s' \"{{agent_1_result}}\" | tclsh8.6 count.tcl",
        "printf '%s' \"{{agent_1_result}}\" | python3 -m json.tool",
        # a script in a folder named dev, reached with .. (review15: asked as if /dev/stdin)
        "printf '%s' \"{{agent_1_result}}\" | python3 ../dev/filter.py",
        "printf '%s' \"{{agent_1_result}}\" | bash ../../tools/dev/lint.sh",
        "printf '%s' \"{{agent_1_result}}\" | python3 -Wignore tool.py",
        "printf '%s' \"{{agent_1_result}}\" | python3 -B tool.py",
    ],
)
def test_a_program_reading_its_script_from_a_file_is_allowed_as_before(
    template: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": "x"}, {}, {})
    arguments = {"command": command, "values": values}
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason


# Debian's perl5.36-x86_64-linux-gnu is perl: no table knew the name, so neither code given
# with -e nor a value piped to it was asked for (sec12)
ARCH_PERL = "perl5.36-x86_64-linux-gnu"


@pytest.mark.parametrize(
    ("template", "result"),
    [
        (f"{ARCH_PERL} -e 'system q(touch ran)'", ""),
        (f"printf '%s' \"{{{{agent_1_result}}}}\" | {ARCH_PERL}", 'system("touch ran")'),
    ],
)
def test_a_perl_named_for_its_machine_is_perl(template: str, result: str, tmp_path: Path) -> None:
    needs(ARCH_PERL)
    command, values = render_command(template, {"1": result}, {}, {})
    bash(command, values, tmp_path, timeout=20)
    assert (tmp_path / "ran").exists()
    (tmp_path / "ran").unlink()
    arguments = {"command": command, "values": values}
    decision = decide("shell", arguments, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask", decision.reason


# make reads makefile text given with --eval (-E, a unique prefix, in a cluster): its
# $(shell …) runs commands (sec12: each ran touch past deny shell(touch:*) unasked)
@pytest.mark.parametrize(
    "command",
    [
        "make --eval='$(shell touch ran)' -f /dev/null",
        "make -E '$(shell touch ran)' -f /dev/null",
        "make --ev='$(shell touch ran)' -f /dev/null",
        "make -sE '$(shell touch ran)' -f /dev/null",
    ],
)
def test_make_given_makefile_text_is_asked_for(command: str, tmp_path: Path) -> None:
    needs("make")
    bash(command, {}, tmp_path, timeout=20)
    assert (tmp_path / "ran").exists()
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "ask" and "--eval" in decision.reason, decision.reason
    with read_as_of((0, 12, 2)):  # as 0.12.2 read it (a leader's replay keeps that)
        assert decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path)).effect == (
            "allow"
        )
    # -f's value is not read as options: a makefile named "E" is no --eval
    plain = "make -fE -s"
    assert decide("shell", {"command": plain}, ROLE, DENY_TOUCH, str(tmp_path)).effect == "allow"
