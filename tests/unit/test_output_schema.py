"""Structured outputs: the three ways to declare an agent's ``<output>`` schema, the checks
``validate`` runs on them, the answers they accept, and ``{{agent_N_result.field}}``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xsky.errors import PlanError
from xsky.plan.files import load_plan
from xsky.plan.output_schema import (
    CORRECTION_HEAD,
    correction,
    corrections,
    result_problems,
    schema_problems,
)
from xsky.plan.variables import RenderError, render
from xsky.plan.xml import parse_workflow, workflow_to_xml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
    "required": ["title", "year"],
}


def plan(output: str, config: str = "") -> str:
    return f"""<workflow name="w" taskId="t">
  <agent name="llm" id="1">
    <task>Find a book</task>
    {config}
    {output}
  </agent>
  <agent name="llm" id="2" depends="1">
    <task>Write about {{{{agent_1_result.title}}}}</task>
  </agent>
</workflow>"""


def test_inline_file_and_config_forms_give_the_same_schema(tmp_path: Path) -> None:
    (tmp_path / "book.json").write_text(json.dumps(SCHEMA))
    forms = {
        "inline": plan(f"<output>{json.dumps(SCHEMA)}</output>"),
        "file": plan('<output schema="book.json"/>'),
        "config": plan("", f"<config>{json.dumps({'output': SCHEMA})}</config>"),
    }
    configs = {}
    for name, text in forms.items():
        path = tmp_path / f"{name}.xml"
        path.write_text(text)
        configs[name] = load_plan(path).workflow.agent("1").config
    assert configs["inline"] == configs["file"] == configs["config"] == {"output": SCHEMA}


def test_output_beside_other_config_keys_keeps_them() -> None:
    wf = parse_workflow(
        plan(f"<output>{json.dumps(SCHEMA)}</output>", '<config>{"model": "m"}</config>')
    )
    assert wf.agent("1").config == {"model": "m", "output": SCHEMA}
    # written back as config, read back the same
    assert parse_workflow(workflow_to_xml(wf)) == wf


def test_a_schema_file_is_found_beside_the_plan_not_in_the_cwd(tmp_path: Path) -> None:
    sub = tmp_path / "plans"
    sub.mkdir()
    (sub / "book.json").write_text(json.dumps(SCHEMA))
    (sub / "p.xml").write_text(plan('<output schema="book.json"/>'))
    assert load_plan(sub / "p.xml").workflow.agent("1").config == {"output": SCHEMA}


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("output", "at", "says"),
    [
        ('<output schema="missing.json"/>', "5:5", "no such file"),
        ('<output>{"type": "strnig"}</output>', "2:3", "not a valid JSON Schema"),
        ("<output>{not json}</output>", "5:5", "<output> of agent 1 is not valid JSON"),
        ("<output>[1, 2]</output>", "2:3", "must be a JSON object, not list"),
        ("<output/>", "5:5", "<output> of agent 1 is empty"),
        ('<output schema="bad.json"/>', "5:5", "bad.json is not valid JSON"),
    ],
    ids=["missing-file", "bad-type", "not-json", "not-object", "empty", "file-not-json"],
)
def test_validate_reports_a_bad_schema_at_its_line_and_no_traceback(
    tmp_path: Path, output: str, at: str, says: str
) -> None:
    (tmp_path / "bad.json").write_text("{oops")
    path = tmp_path / "p.xml"
    path.write_text(plan(output))
    res = validate(path)
    assert res.returncode == 2, res.stdout
    assert "Traceback" not in res.stderr
    said = " ".join(res.stderr.split())  # the console wraps long lines
    assert f"{path}:{at}: " in said and says in said, res.stderr
    assert "fix" in said or "write" in said or "must" in said  # it says what to do


def test_a_bad_schema_in_config_is_reported_too(tmp_path: Path) -> None:
    path = tmp_path / "p.xml"
    path.write_text(plan("", '<config>{"output": {"required": "title"}}</config>'))
    with pytest.raises(PlanError) as e:
        load_plan(path)
    (problem,) = e.value.problems
    assert "agent 1: the output schema is not a valid JSON Schema" in problem.message
    assert "required" in problem.message and problem.line == 2


def test_output_twice_is_refused() -> None:
    with pytest.raises(PlanError, match='both <output> and "output" in its <config>'):
        parse_workflow(plan("<output>{}</output>", '<config>{"output": {}}</config>'))


def test_schema_problems_accepts_a_good_schema() -> None:
    assert schema_problems(SCHEMA) == []


def test_result_problems_lists_every_error_with_its_place() -> None:
    value, problems = result_problems(SCHEMA, '{"title": 3}')
    assert value == {"title": 3}
    assert problems == [
        "(top level): 'year' is a required property",
        "title: 3 is not of type 'string'",
    ]
    assert result_problems(SCHEMA, '```json\n{"title": "Dune", "year": 1965}\n```') == (
        {"title": "Dune", "year": 1965},
        [],
    )
    _, not_json = result_problems(SCHEMA, "Here is the book: Dune")
    assert not_json[0].startswith("the answer is not valid JSON")


def test_corrections_count_the_answers_sent_back() -> None:
    messages = [
        {"role": "user", "content": "Your task: x"},
        {"role": "assistant", "content": "nope"},
        {"role": "user", "content": correction(["the answer is not valid JSON"])},
        {"role": "assistant", "content": CORRECTION_HEAD},  # the model quoting it is no correction
    ]
    assert corrections(messages) == 1


RESULT = json.dumps(
    {"title": "Dune", "year": 1965, "tags": ["sf", "desert"], "meta": {"isbn": "x1"}}
)


def test_field_access_reaches_into_a_json_result() -> None:
    text = "{{agent_1_result.title}} ({{agent_1_result.year}}) {{agent_1_result.tags.1}} {{agent_1_result.meta.isbn}}"
    assert render(text, {"1": RESULT}, {}, {}) == "Dune (1965) desert x1"
    assert render("{{agent_1_result}}", {"1": RESULT}, {}, {}) == RESULT


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        (
            "{{agent_1_result.author}}",
            "the result has no field 'author' (its fields: meta, tags, title, year)",
        ),
        ("{{agent_1_result.meta.isbn13}}", "meta has no field 'isbn13' (its fields: isbn)"),
        ("{{agent_1_result.tags.5}}", "tags has no field '5' (it is a list of 2 items"),
        ("{{agent_1_result.title.x}}", "title has no field 'x' (it is a str, not an object)"),
    ],
)
def test_a_missing_field_is_a_clear_render_error(ref: str, says: str) -> None:
    with pytest.raises(RenderError) as e:
        render(ref, {"1": RESULT}, {}, {})
    assert str(e.value) == f"{ref}: {says}" or says in str(e.value)
    assert str(e.value).startswith(ref)


def test_a_field_of_a_result_that_is_not_json_says_so() -> None:
    with pytest.raises(RenderError, match="agent 1's result is not JSON, so it has no fields"):
        render("{{agent_1_result.title}}", {"1": "Dune, by Frank Herbert"}, {}, {})


def test_a_field_of_a_result_nested_deeper_than_json_is_read_is_a_render_error() -> None:
    # a page or a tool made the result: the agent reading it fails with a sentence, the
    # leader never stops on a RecursionError
    with pytest.raises(RenderError, match="nested deeper than it can be read"):
        render("{{agent_1_result.title}}", {"1": "[" * 1200 + "]" * 1200}, {}, {})


def test_a_field_of_a_stored_result_says_it_is_stored() -> None:
    marker = "⟦artifact://run/1/result.txt⟧"
    with pytest.raises(RenderError, match="kept in the artifact store"):
        render("{{agent_1_result.title}}", {"1": marker}, {}, {})


def test_validate_accepts_field_references_of_a_dependency_and_refuses_others(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p.xml"
    path.write_text(plan(f"<output>{json.dumps(SCHEMA)}</output>"))
    assert validate(path).returncode == 0
    path.write_text(plan("").replace('depends="1"', ""))
    res = validate(path)
    said = " ".join(res.stderr.split())  # the error is wrapped at the terminal's width
    assert res.returncode == 2
    assert "{{agent_1_result.title}} is used but agent 2 does not depend on agent 1" in said


def test_the_planner_may_emit_schemas_and_its_bad_ones_are_refused() -> None:
    from xsky.errors import WorkflowValidationError
    from xsky.plan.planning import PlanRequest, check_plan, planning_prompt

    assert "<output>" in planning_prompt(PlanRequest(task_id="t", task_prompt="x"))
    good = parse_workflow(plan(f"<output>{json.dumps(SCHEMA)}</output>"))
    assert check_plan(good, ["llm"]) == good
    bad = parse_workflow(plan('<output>{"type": "strnig"}</output>'))
    with pytest.raises(WorkflowValidationError) as e:
        check_plan(bad, ["llm"])
    assert "agent 1: the output schema is not a valid JSON Schema" in e.value.problems[0].message


def test_a_plan_given_as_text_names_no_file_and_a_plan_file_reads_only_a_regular_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's plan, a replan or a plan sent through the API is read by a worker or a
    leader: <output schema="/path"> read any JSON file of that machine into the run's plan
    (and a FIFO named there froze the leader's workflow task)."""
    from xsky.errors import WorkflowXMLError
    from xsky.plan.xml import parse_workflow_source, schema_files_read_as_before_v0_11_8

    canary = tmp_path / "creds.json"
    canary.write_text(json.dumps({"type": "object", "description": "CANARY-8d1f"}))
    text = plan(f'<output schema="{canary}"/>')
    with pytest.raises(WorkflowXMLError) as refused:
        parse_workflow_source(text)
    said = " ".join(p.message for p in refused.value.problems)
    assert "cannot name a file" in said and "CANARY" not in said
    with schema_files_read_as_before_v0_11_8():  # a leader replaying an older run's replan
        assert "CANARY-8d1f" in json.dumps(parse_workflow_source(text).workflow.agent("1").config)
    # From its file, a FIFO (or a folder) named as the schema is refused at once, not waited on
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "p.xml").write_text(plan('<output schema="pipe.json"/>'))
    with pytest.raises(PlanError, match="not a regular file"):
        load_plan(tmp_path / "p.xml")


def test_a_replan_file_naming_a_schema_is_sent_with_the_schema_inline(tmp_path: Path) -> None:
    from cli.steer_cmd import checked_plan_file
    from xsky.plan.xml import parse_workflow

    (tmp_path / "book.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "p.xml").write_text(plan('<output schema="book.json"/>'))
    checked = checked_plan_file(str(tmp_path / "p.xml"), "nothing was changed")
    assert checked is not None
    sent, _ = checked
    assert b"schema=" not in sent and parse_workflow(sent).agent("1").config == {"output": SCHEMA}


def test_the_leader_reads_a_replan_naming_a_file_as_the_run_first_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workflows.leader.io as leader_io
    from xsky.errors import WorkflowXMLError

    answers = {"plan-text-reads-no-files": False}
    monkeypatch.setattr(leader_io, "patched", lambda patch_id: answers.get(patch_id, True))
    (tmp_path / "book.json").write_text(json.dumps(SCHEMA))
    text = plan(f'<output schema="{tmp_path / "book.json"}"/>')
    assert leader_io.read_plan_xml(text).workflow.agent("1").config == {"output": SCHEMA}
    answers["plan-text-reads-no-files"] = True  # a run begun from now on: no file is opened
    with pytest.raises(WorkflowXMLError, match="cannot name a file"):
        leader_io.read_plan_xml(text)


def test_a_pattern_that_would_take_for_ever_is_an_error_in_bounded_time() -> None:
    """'^(a|a)+$' against 25 a's and a b took ~1 s with re, doubling with each character: a
    plan's (or a planner's, or an MCP server's) pattern could stop a worker."""
    import time

    from activities.mcp.toolset import schema_problem

    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a|a)+$"}}}
    answer = json.dumps({"code": "a" * 60 + "b"})
    began = time.monotonic()
    _, problems = result_problems(schema, answer)
    assert time.monotonic() - began < 5
    assert len(problems) == 1 and "took too long" in problems[0] and "simplify" in problems[0]
    # an ordinary pattern is still checked as before, message and all
    _, problems = result_problems(schema, json.dumps({"code": "b"}))
    assert problems == ["code: 'b' does not match '^(a|a)+$'"]
    assert result_problems(schema, json.dumps({"code": "aaa"}))[1] == []
    # an MCP server's input schema: the same
    began = time.monotonic()
    said = schema_problem(schema, {"code": "a" * 60 + "b"})
    assert time.monotonic() - began < 5 and said is not None and "took too long" in said
    keyed = {"type": "object", "patternProperties": {"^(a|a)+$": {"type": "integer"}}}
    _, problems = result_problems(keyed, json.dumps({"a" * 60 + "b": 1, "aa": "x"}))
    assert any("took too long" in p for p in problems) and any(
        "'x' is not of type" in p for p in problems
    )


def test_patterns_jsonschema_searches_itself_are_bounded_and_so_is_the_whole_check() -> None:
    """A review found '^(a|a)+$' still hung a check through additionalProperties (jsonschema
    asks which keys the patterns cover with re), and 1,000 slow strings took 12 s."""
    import time

    covered = {
        "type": "object",
        "patternProperties": {"^(a|a)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    began = time.monotonic()
    _, problems = result_problems(covered, json.dumps({"a" * 40 + "!": 1}))
    assert time.monotonic() - began < 5 and any("took too long" in p for p in problems)
    many = {"type": "array", "items": {"type": "string", "pattern": "^(a|a)+$"}}
    began = time.monotonic()
    _, problems = result_problems(many, json.dumps(["a" * 30 + "!"] * 1000))
    assert time.monotonic() - began < 5 and problems
    # ordinary schemas of the same keywords still check what they say
    plain = {
        "type": "object",
        "patternProperties": {"^x": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert result_problems(plain, json.dumps({"x1": 1}))[1] == []
    assert result_problems(plain, json.dumps({"y": 1}))[1]


def test_a_2019_09_schemas_unevaluated_properties_is_bounded_too() -> None:
    """Draft 2019-09 asks its patterns through jsonschema's legacy keywords (a review found it
    took 10 s at 28 characters, doubling with each)."""
    import time

    from activities.mcp.toolset import schema_problem

    schema = {
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "type": "object",
        "patternProperties": {"^(a|a)+$": {"type": "integer"}},
        "unevaluatedProperties": False,
    }
    began = time.monotonic()
    said = schema_problem(schema, {"a" * 40 + "b": 1})
    assert time.monotonic() - began < 5 and said is not None and "took too long" in said
