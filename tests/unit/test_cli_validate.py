"""`starter.py validate`: a tree for good plans, every problem with file:line:col for bad ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VALID = sorted(p for p in (ROOT / "examples").glob("*.xml"))
INVALID = sorted((ROOT / "examples" / "invalid").glob("*.xml"))


def starter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), *args], capture_output=True, text=True, cwd=ROOT
    )


def test_there_are_at_least_three_valid_and_several_invalid_examples():
    assert len(VALID) >= 3 and len(INVALID) >= 4


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_examples_print_a_tree_with_levels_and_critical_path(path):
    res = starter("validate", str(path))
    assert res.returncode == 0, res.stderr
    assert "level 0" in res.stdout and "critical path" in res.stdout
    data = json.loads(starter("validate", str(path), "--json").stdout)
    assert data["valid"] is True and data["agents"] >= 3
    assert data["criticalPath"]["length"] == len(data["levels"])


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_examples_exit_2_with_file_line_col(path):
    res = starter("validate", str(path))
    assert res.returncode == 2
    rel = str(path)
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith(rel + ":")]
    assert lines, res.stderr
    for ln in lines[1:] if lines[0].endswith(("problem", "problems")) else lines:
        head = ln[len(rel) + 1 :].split(":", 2)
        assert head[0].isdigit() and head[1].isdigit(), ln
    assert "Traceback" not in res.stderr


def test_many_problems_are_all_listed_with_their_lines():
    res = starter("validate", str(ROOT / "examples/invalid/many_problems.xml"))
    found = [
        ln.split(":")[1]
        for ln in res.stderr.splitlines()
        if "many_problems.xml:" in ln and ": " in ln
    ][1:]
    assert found == ["3", "4", "5", "6", "7", "7"]


def test_a_variable_given_on_the_command_line_satisfies_the_check(tmp_path):
    plan = tmp_path / "p.xml"
    plan.write_text(
        '<workflow name="v" taskId="t"><agent name="llm" id="1"><task>About {{topic}}</task></agent></workflow>'
    )
    assert starter("validate", str(plan)).returncode == 2
    assert starter("validate", str(plan), "--var", "topic=AI").returncode == 0


def test_missing_file_and_bad_var_are_usage_errors_without_traceback(tmp_path):
    res = starter("validate", str(tmp_path / "nope.xml"))
    assert res.returncode == 2 and "no such file" in res.stderr and "Traceback" not in res.stderr
    res = starter("validate", str(VALID[0]), "--var", "novalue")
    assert res.returncode == 2 and "--var name=value" in res.stderr


def test_a_bad_config_does_not_hide_the_plans_other_problems(tmp_path):
    plan = tmp_path / "p.xml"
    plan.write_text(
        '<workflow name="v" taskId="t">\n'
        '  <agent name="shell" id="1"><task>a</task><config>{"tool": "shell", "command": </config></agent>\n'
        '  <agent name="brwser" id="2" depends="1"><task>b</task></agent>\n'
        '  <agent name="llm" id="3" depends="9"><task>c {{nope}}</task></agent>\n'
        '  <agent name="llm" id="4"><task>d</task><config>{"tool": "nope"}</config></agent>\n'
        "</workflow>\n"
    )
    res = starter("validate", str(plan))
    said = [ln for ln in res.stderr.splitlines() if ln.startswith(f"{plan}:")][1:]
    assert res.returncode == 2 and "5 problems" in res.stderr, res.stderr
    assert [ln.split(":")[1] for ln in said] == ["2", "3", "4", "4", "5"], res.stderr
    joined = " ".join(res.stderr.split())
    for piece in (
        "not valid JSON",
        "unknown agent name 'brwser'",
        "unknown agent '9'",
        "{{nope}}",
        "'nope'",
    ):
        assert piece in joined, (piece, res.stderr)
    data = json.loads(starter("validate", str(plan), "--json").stdout)
    assert data["valid"] is False and len(data["problems"]) == 5


def test_a_direct_tool_without_its_argument_is_a_problem(tmp_path):
    plan = tmp_path / "p.xml"
    plan.write_text(
        '<workflow name="v" taskId="t">'
        '<agent name="shell" id="1"><task>a</task><config>{"tool": "shell", "timeout": 5}</config></agent>'
        '<agent name="file" id="2"><task>b</task><config>{"tool": "file_write", "path": "x"}</config></agent>'
        '<agent name="file" id="3"><task>c</task><config>{"tool": "file_write", "path": "x", "content": ""}</config></agent>'
        "</workflow>"
    )
    res = starter("validate", str(plan))
    joined = " ".join(res.stderr.split())
    assert res.returncode == 2 and "2 problems" in joined, res.stderr
    assert (
        'agent 1 (shell) has no command: add it to its config, e.g. <config>{"tool": "shell", "command": "…"}</config>'
        in joined
    )
    assert "agent 2 (file_write) has no content" in joined  # an empty content is a content


def test_a_shell_agent_without_a_command_is_valid_with_a_warning_that_names_the_condition(tmp_path):
    # With a model the worker's agent loop chooses its commands; without one it fails at once
    # (activities/agents/direct.py) — which only the worker knows: a warning, exit 0.
    plan = tmp_path / "p.xml"
    plan.write_text(
        '<workflow name="v" taskId="t"><agent name="shell" id="1"><task>list the files</task></agent>'
        '<agent name="shell" id="2"><task>x</task><config>{"tool": "shell", "command": "ls"}</config></agent></workflow>'
    )
    res = starter("validate", str(plan))
    joined = " ".join(res.stderr.split())
    assert res.returncode == 0 and "level 0" in res.stdout, res.stderr
    assert f"warning: {plan}:1:" in joined and "agent 1 (shell) has no command" in joined
    assert "runs only on a worker with a model" in joined and "agent 2" not in joined
    data = json.loads(starter("validate", str(plan), "--json").stdout)
    assert data["valid"] is True and [w.split(": ", 1)[1][:30] for w in data["warnings"]] == [
        "agent 1 (shell) has no command"
    ]


EKO_FOREACH = """<root>
  <name>Greetings</name>
  <agents>
    <agent name="Chat" id="0" dependsOn="">
      <task>Greet the team</task>
      <nodes>
        <node output="people">List the people of the team</node>
        <forEach items="people"><node>Write a greeting for the person</node></forEach>
      </nodes>
    </agent>
  </agents>
</root>"""


def test_a_plan_the_leader_changes_as_it_begins_is_shown_as_it_will_run(tmp_path):
    # An Eko forEach among an agent's steps becomes agents of its own on the board: validate
    # shows that board before the run, not only the plan as written.
    path = tmp_path / "eko.xml"
    path.write_text(EKO_FOREACH, encoding="utf-8")
    shown = starter("validate", str(path))
    assert shown.returncode == 0, shown.stderr
    written, _, running = shown.stdout.partition("as it runs: ")
    assert "1 agent ·" in written and running, shown.stdout
    assert "0.list → 0" in running and "2 agents · 2 levels" in running
    assert "for each item of {{agent_0.list_result}}" in running
    data = json.loads(starter("validate", str(path), "--json").stdout)
    assert data["agents"] == 1 and data["asItRuns"]["agents"] == 2
    assert data["asItRuns"]["criticalPath"]["agents"] == ["0.list", "0"]
    # a plan run as written says nothing more
    plain = starter("validate", str(ROOT / "examples" / "chain.xml"))
    assert plain.returncode == 0 and "as it runs" not in plain.stdout
    assert "asItRuns" not in json.loads(
        starter("validate", str(ROOT / "examples" / "chain.xml"), "--json").stdout
    )


def test_a_mistyped_config_key_and_a_watch_key_no_watch_reads_are_problems(tmp_path):
    # "untill" turned a newcomer's watch's stop condition off without a word (validate: rc 0)
    path = tmp_path / "w.xml"
    path.write_text(
        '<workflow name="w"><agent name="shell" id="w"><task>watch</task><config>'
        '{"tool": "shell", "command": "date", "timout": 5, "watch": {"event": "timer", '
        '"every": 1, "maxFirings": 2, "idleTimeout": 10, "untill": "x"}}</config></agent></workflow>'
    )
    res = starter("validate", str(path))
    said = " ".join(res.stderr.split())
    assert res.returncode == 2, res.stdout
    assert "'timout' is read by nothing — did you mean 'timeout'?" in said
    assert "config watch has 'untill', which no watch reads — did you mean 'until'?" in said
    # keys no known one is near are a tool's own business: not refused
    path.write_text(
        '<workflow name="w"><agent name="shell" id="w"><task>t</task><config>'
        '{"tool": "shell", "command": "date", "myNote": "kept"}</config></agent></workflow>'
    )
    assert starter("validate", str(path)).returncode == 0
    # an MCP tool's own arguments, and a watch's fields by their names, are read (a review
    # found both refused)
    path.write_text(
        '<workflow name="w"><agent name="file" id="r"><task>t</task><config>'
        '{"tool": "mcp__fs__read_multiple_files", "paths": ["a.txt"]}</config></agent>'
        '<agent name="file" id="w"><task>t</task><config>{"watch": {"event": "file", '
        '"path": "out.txt", "max_firings": 1, "idle_timeout": 600}}</config></agent></workflow>'
    )
    res = starter("validate", str(path))
    assert res.returncode == 0, res.stderr
    # but a near miss of a key xsky reads for every agent is a typo there too ("retires" would
    # have gone to the MCP server as an argument)
    path.write_text(
        '<workflow name="w"><agent name="file" id="r"><task>t</task><config>'
        '{"tool": "mcp__fs__read_text_file", "path": "a.txt", "retires": 3}</config></agent></workflow>'
    )
    said = " ".join(starter("validate", str(path)).stderr.split())
    assert "'retires' is read by nothing — did you mean 'retries'?" in said


def test_every_problem_at_once_with_the_names_they_are_one_typo_from(tmp_path):
    """A newcomer's plan showed 5 problems, then — fixed — 7 more: an agent without a task hid
    the checks of the whole plan (tools, names, references)."""
    path = tmp_path / "typos.xml"
    path.write_text(
        '<workflow name="t">\n'
        '  <agent name="file" id="1" depend="0"><taks>read</taks>'
        '<config>{"tool": "file_wirte", "path": "a"}</config></agent>\n'
        '  <agent name="shel" id="2" depends="1"><task>use {{agent_1_reslt}}</task></agent>\n'
        "</workflow>\n"
    )
    res = starter("validate", str(path))
    said = " ".join(res.stderr.split())
    assert res.returncode == 2
    for part in (
        "unknown attribute 'depend' on <agent> (did you mean 'depends'?)",
        "unknown element <taks> inside <agent> (did you mean <task>?)",
        "agent 1 has no <task>",
        "config tool 'file_wirte' is not a direct tool (did you mean 'file_write'?)",
        "unknown agent name 'shel'",
    ):
        assert part in said, (part, said)


def test_a_long_problem_or_warning_is_one_line_where_the_output_is_piped(tmp_path: Path):
    """Piped (grep, an editor's error list), a problem longer than the console's width was
    wrapped into two lines, the second with no file:line:col."""
    long_id = "a_dependency_with_a_name_long_enough_to_push_the_line_past_the_width" * 2
    bad = tmp_path / "bad.xml"
    bad.write_text(
        f'<workflow name="w">\n  <agent name="shell" id="1" depends="{long_id}"><task>x</task>'
        '<config>{"tool": "shell", "command": "echo"}</config></agent>\n</workflow>\n'
    )
    res = starter("validate", str(bad))
    assert res.returncode == 2
    said = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(said) == 2 and said[1].startswith(f"{bad}:2:3: ") and len(said[1]) > 200, said
    warned = tmp_path / "warned.xml"  # a shell agent without a command: a warning, piped whole
    warned.write_text(
        '<workflow name="w"><agent name="shell" id="1"><task>x</task></agent></workflow>'
    )
    lines = [ln for ln in starter("validate", str(warned)).stderr.splitlines() if "warning:" in ln]
    assert len(lines) == 1 and "for a fixed call add" in lines[0], lines


def test_a_plan_with_a_document_type_is_told_so_not_that_it_sits_inside_other_text(
    tmp_path: Path,
):
    plan = tmp_path / "dtd.xml"
    plan.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE workflow [<!ENTITY x "y">]>\n'
        '<workflow name="w"><agent name="llm" id="1"><task>&x;</task></agent></workflow>\n'
    )
    res = starter("validate", str(plan))
    assert res.returncode == 2 and "DOCTYPE and DTD declarations are not allowed" in res.stderr
    assert "inside other text" not in res.stderr


def test_a_timeout_on_an_agent_without_a_tool_is_said_to_be_read_by_nothing(tmp_path: Path):
    """An llm agent's {"timeout": 30} was taken without a word, and bounded nothing (a model
    server trickling a byte a second held the call open)."""
    plan = tmp_path / "t.xml"
    plan.write_text(
        '<workflow name="w"><agent name="llm" id="1"><task>x</task><input>y</input>'
        '<config>{"timeout": 30}</config></agent>'
        '<agent name="shell" id="2"><task>t</task>'
        '<config>{"tool": "shell", "command": "true", "timeout": 30}</config></agent></workflow>'
    )
    res = starter("validate", str(plan))
    said = [ln for ln in res.stderr.splitlines() if "config key 'timeout'" in ln]
    assert res.returncode == 0 and len(said) == 1 and "agent 1:" in said[0], res.stderr
    assert "startToCloseTimeout" in said[0]


def test_validate_says_a_direct_tool_the_agents_role_may_not_use(tmp_path, monkeypatch):
    """A `shell` agent with a direct http_get passed validate; the worker refused the call at
    once and the agent failed, not retried. Said as a warning at the agent's line, with the
    kinds that hold the tool; an allow rule of the worker's settings that gives it is heeded."""
    settings = tmp_path / "settings.json"
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(settings))
    plan = tmp_path / "plan.xml"
    plan.write_text(
        '<workflow name="t">\n'
        '  <agent name="shell" id="1"><task>get</task>\n'
        '    <config>{"tool": "http_get", "url": "https://example.com/"}</config></agent>\n'
        '  <agent name="browser" id="2"><task>get</task>\n'
        '    <config>{"tool": "http_get", "url": "https://example.com/"}</config></agent>\n'
        "</workflow>\n"
    )
    res = starter("validate", str(plan))
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stderr.split())
    assert (
        f"warning: {plan}:2:3: agent 1: role shell may not use http_get (not in its allowedTools "
        "or requestedTools) — a worker refuses its direct http_get at once; give the agent a "
        "kind or role that holds it (browser" in said
    ), said
    assert "agent 2" not in said, said
    settings.write_text('{"permissions": {"allow": ["http_get"]}}')
    assert "refuses its direct" not in starter("validate", str(plan)).stderr
    # A rule for some of the tool's calls gives it too: the worker allows this one (its url)
    settings.write_text('{"permissions": {"allow": ["http_get(domain:example.com)"]}}')
    assert "refuses its direct" not in starter("validate", str(plan)).stderr


def test_validate_says_a_direct_mcp_tool_the_agents_role_may_not_use(tmp_path, monkeypatch):
    """A `file` agent with a direct mcp__fs__write_file passed validate with no word (walk9);
    no built-in role holds an MCP tool, so the worker refused the call at once. Said as for
    xsky's own tools; an allow rule for the tool or its server is heeded."""
    settings = tmp_path / "settings.json"
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(settings))
    plan = tmp_path / "plan.xml"
    plan.write_text(
        '<workflow name="t">\n'
        '  <agent name="file" id="1"><task>write</task>\n'
        '    <config>{"tool": "mcp__fs__write_file", "path": "a", "content": "b"}</config></agent>\n'
        "</workflow>\n"
    )
    res = starter("validate", str(plan))
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stderr.split())
    assert f"warning: {plan}:2:3: agent 1: role file may not use mcp__fs__write_file" in said, said
    assert "a worker refuses its direct mcp__fs__write_file at once" in said, said
    for rule in ("mcp__fs", "mcp__fs__write_file"):
        settings.write_text(json.dumps({"permissions": {"allow": [rule]}}))
        assert "refuses its direct" not in starter("validate", str(plan)).stderr


def test_validate_says_what_each_role_the_plan_defines_may_do(tmp_path, monkeypatch):
    """A plan's <role> was shown nowhere: a new role's writing, running and network tools are
    asked of a person call by call (until the plan is approved), and a known role's are
    narrowed — validate says so per role, and --json has them as `roles`."""
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "none.json"))
    plan = tmp_path / "plan.xml"
    plan.write_text(
        '<workflow name="r">'
        '<role name="backend" tools="file_read,shell" requestedTools="python_exec"/>'
        '<role name="scraper" description="fetches" tools="http_get,file_write,file_read" skills="s1"/>'
        '<agent name="backend" id="1"><task>t</task></agent>'
        '<agent name="scraper" id="2"><task>t</task></agent></workflow>'
    )
    res = starter("validate", str(plan))
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stdout.split())
    assert (
        "backend (narrows the role of that name): uses file_read, shell; asks a person before "
        "each call of python_exec" in said
    ), said
    assert (
        "scraper (new): uses file_read, read_skill; asks a person before each call of "
        "http_get, file_write; skills s1" in said
    ), said
    roles = {
        r["name"]: r for r in json.loads(starter("validate", str(plan), "--json").stdout)["roles"]
    }
    assert roles["scraper"]["askedTools"] == ["http_get", "file_write"]
    assert roles["backend"]["allowedTools"] == ["file_read", "shell"]
    # A plan with no <role> says nothing more (the tutorial's output stays as it is).
    assert "roles this plan defines" not in starter("validate", str(VALID[0])).stdout
