"""A {{…}} value standing where a program reads options is that option when it begins with
'-' (a fourth review: `git grep -n "{{…}}" -- .` ran a value '-Ocmd', `git log "{{…}}"` wrote
'--output=FILE', `git ls-remote "{{…}}" .` ran '--upload-pack=cmd', `scp "{{…}}" f h:` ran
'-oProxyCommand=cmd', `sort "{{…}}" -S 1k big` ran '--compress-program=cmd', `sed -n p f.txt
"{{…}}"` ran '--expression=1e cmd', `cmake "{{…}}"` ran '-Pscript' — each allowed unasked
where the role holds shell, whatever deny rules said). Such a command is asked for, for
programs the checker knows have options that run programs or write files (and git's
subcommands); after `--`, or as a value option's value, it is data. Each premise is checked with
real bash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.real_bash import DENY_TOUCH, ROLE, bash
from xsky.plan.variables import render_command
from xsky.security.permissions import decide

REPO = (
    "git init -q . && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m m && "
    "echo hello > f.txt && git add f.txt"
)
# (the plan's command, agent 1's result, a setup command)
AN_OPTION_IN_A_VALUE = [
    ('git grep -n "{{agent_1_result}}" -- .', "-Otouch ran; true", REPO),
    ('git log "{{agent_1_result}}"', "--output=ran", REPO),
    ('git ls-remote "{{agent_1_result}}" .', "--upload-pack=touch ran; false", REPO),
    ('git clone "{{agent_1_result}}" . out', "--upload-pack=touch ran; false", REPO),
    ('scp "{{agent_1_result}}" f.txt x:', "-oProxyCommand=touch ran", "echo a > f.txt"),
    ('zip -q out.zip f.txt "{{agent_1_result}}" -T', "--unzip-command=touch ran;", "echo a > f.txt"),
    ('sed -n "/x/p" f.txt "{{agent_1_result}}"', "--expression=1e touch ran", "echo a > f.txt"),
    ('sed -i "s/a/b/" "{{agent_1_result}}"', "--expression=w ran", "echo a > f.txt"),
    ('cmake "{{agent_1_result}}"', "-Ps.cmake", "echo 'file(TOUCH ran)' > s.cmake"),
]  # fmt: skip


@pytest.mark.parametrize(("template", "result", "setup"), AN_OPTION_IN_A_VALUE)
def test_the_value_is_read_as_an_option(
    template: str, result: str, setup: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    env = {**values, "HOME": str(tmp_path)}
    for script in (setup, command):
        bash(script, env, tmp_path)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize(("template", "result", "setup"), AN_OPTION_IN_A_VALUE)
def test_a_value_where_options_are_read_is_asked_for(
    template: str, result: str, setup: str, tmp_path: Path
) -> None:
    command, values = render_command(template, {"1": result}, {}, {})
    for given in ({}, {"values": values}):  # its text unknown to the checker, or given it
        decision = decide("shell", {"command": command, **given}, ROLE, DENY_TOUCH, str(tmp_path))
        assert decision.effect == "ask", decision.reason
        assert "where it reads options" in decision.reason


@pytest.mark.parametrize(("template", "result", "setup"), AN_OPTION_IN_A_VALUE)
def test_a_value_that_cannot_begin_an_option_is_data_there(
    template: str, result: str, setup: str, tmp_path: Path
) -> None:
    # The call carries its values: a URL, a file name, a branch cannot begin an option, so
    # `curl "{{url}}"` over a forEach's items is not asked of a person item by item.
    benign = "https://example.com/a b" if "clone" in template else "notes.txt"
    command, values = render_command(template, {"1": benign}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert "where it reads options" not in decision.reason, decision.reason
    command, values = render_command(template, {"1": "-x"}, {}, {})  # an option
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason
    for risky in ("", "a -x", "*"):  # nothing, a word after a split, a glob: unquoted alone
        command, values = render_command(template, {"1": risky}, {}, {})
        bare = command.replace('"${XSKY_V1}"', "${XSKY_V1}")
        decision = decide(
            "shell", {"command": bare, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
        )
        assert decision.effect == "ask", (risky, decision.reason)
        decision = decide(
            "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
        )
        assert "where it reads options" not in decision.reason, (risky, decision.reason)


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ('curl -s "{{agent_1_result}}"', "https://example.com/search?q=x"),
        ('cp "{{agent_1_result}}" out/', "Report - final.pdf"),
        ('git grep -n "{{agent_1_result}}"', "what?"),
        ('wget -q "{{agent_1_result}}"', "https://example.com/f*.zip"),
    ],
)
def test_a_quoted_value_is_one_word_as_it_is_neither_split_nor_globbed(
    template: str, value: str, tmp_path: Path
) -> None:
    # Rendered "${XSKY_V1}": bash neither splits nor globs it, so a URL's '?' or a file
    # name's ' - ' begins no option — each such forEach item was asked of a person.
    command, values = render_command(template, {"1": value}, {}, {})
    (tmp_path / "-x").write_text("")  # (a file a glob would find, were it one)
    shown = subprocess.run(
        ["bash", "-c", 'printf "[%s]" "${XSKY_V1}"'],
        env={**values, "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert shown.stdout == f"[{value}]"  # (the premise, with real bash: one word, as it is)
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "allow", decision.reason


@pytest.mark.parametrize(
    "template",
    [
        'git grep -n -e "{{agent_1_result}}" -- .',
        'git commit -m "{{agent_1_result}}"',
        'git checkout -b "{{agent_1_result}}"',
        'git log --grep="{{agent_1_result}}"',
        'git log -- "{{agent_1_result}}"',
        'git clone -- "{{agent_1_result}}" out',
        'sed -i "s/a/b/" -- "{{agent_1_result}}"',
        'grep -c "{{agent_1_result}}" f.txt',
        'cat "{{agent_1_result}}"',
        'tar -xf "{{agent_1_result}}"',
        'echo "{{agent_1_result}}"',
    ],
)
def test_a_value_given_as_data_is_allowed(template: str, tmp_path: Path) -> None:
    command, _ = render_command(template, {"1": "x"}, {}, {})
    decision = decide("shell", {"command": command}, ROLE, DENY_TOUCH, str(tmp_path))
    assert decision.effect == "allow", decision.reason


def test_a_value_after_an_empty_one_in_the_same_word_is_asked_for(tmp_path: Path) -> None:
    # `"{{a}}{{b}}"` renders one word, "${XSKY_V1}""${XSKY_V2}": with the first value empty the
    # second begins it — '-Ocmd' ran under git grep (and past deny shell(touch:*)) unasked, as
    # only the first value's text was read.
    template = 'git grep -n "{{agent_1_result}}{{agent_2_result}}" -- .'
    command, values = render_command(template, {"1": "", "2": "-Otouch ran; true"}, {}, {})
    env = {**values, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for script in (REPO, command):
        subprocess.run(
            ["bash", "-c", script], env=env, cwd=tmp_path, capture_output=True, timeout=20
        )
    assert (tmp_path / "ran").exists()  # (the premise, with real bash)
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "ask", decision.reason
    command, values = render_command(template, {"1": "a", "2": "-x"}, {}, {})
    decision = decide(
        "shell", {"command": command, "values": values}, ROLE, DENY_TOUCH, str(tmp_path)
    )
    assert decision.effect == "allow", decision.reason  # 'a-x' begins no option
