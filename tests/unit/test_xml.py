"""workflow XML: reading the seed's format, writing it back, and refusing bad input clearly."""

from __future__ import annotations

import re

import pytest

from xsky.errors import WorkflowXMLError
from xsky.plan.extract import extract_workflow_xml
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.xml import (
    parse_workflow,
    parse_workflow_source,
    workflow_to_xml,
)

SEED_EXAMPLE = """<workflow name="Task Name" taskId="uuid">
  <agent name="browser" id="1">
    <task>Navigate to google.com and search for AI news</task>
  </agent>
  <agent name="llm" id="2" depends="1">
    <task>Summarize the search results</task>
    <input>{{agent_1_result}}</input>
  </agent>
</workflow>"""


def test_parses_the_seed_example_with_its_fields():
    wf = parse_workflow(SEED_EXAMPLE)
    assert wf.name == "Task Name" and wf.task_id == "uuid"
    assert [(a.id, a.name, a.depends) for a in wf.agents] == [
        ("1", "browser", []),
        ("2", "llm", ["1"]),
    ]
    assert wf.agents[1].input == "{{agent_1_result}}"
    assert all(a.status == "init" for a in wf.agents)


def test_wire_format_keeps_the_seed_camel_case():
    wire = parse_workflow(SEED_EXAMPLE).wire()
    assert "taskId" in wire and "task_id" not in wire
    assert Workflow.model_validate(wire) == parse_workflow(SEED_EXAMPLE)


def test_missing_task_id_gets_a_uuid4():
    wf = parse_workflow(
        '<workflow name="x"><agent name="llm" id="1"><task>t</task></agent></workflow>'
    )
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", wf.task_id
    )


def test_agent_order_is_preserved():
    agents = "".join(f'<agent name="llm" id="{i}"><task>t{i}</task></agent>' for i in (9, 3, 7, 1))
    wf = parse_workflow(f'<workflow name="o" taskId="t">{agents}</workflow>')
    assert [a.id for a in wf.agents] == ["9", "3", "7", "1"]


def test_text_may_hold_unicode_ampersands_angle_brackets_quotes_and_newlines():
    xml = """<workflow name="Ünïcødé &amp; &quot;quotes&quot; 😀" taskId="t">
      <agent name="llm" id="1">
        <task><![CDATA[if a < b && c > d: print("x")]]></task>
        <input>5 &lt; 6 &amp; 'ok'
second line 中文</input>
      </agent></workflow>"""
    wf = parse_workflow(xml)
    assert wf.name == 'Ünïcødé & "quotes" 😀'
    assert wf.agents[0].task == 'if a < b && c > d: print("x")'
    assert wf.agents[0].input == "5 < 6 & 'ok'\nsecond line 中文"


def test_indented_multiline_text_is_dedented():
    xml = """<workflow name="w" taskId="t"><agent name="llm" id="1"><task>
        First line
          indented more
        Last line
    </task></agent></workflow>"""
    assert parse_workflow(xml).agents[0].task == "First line\n  indented more\nLast line"


def test_config_is_a_json_object():
    xml = '<workflow name="w" taskId="t"><agent name="shell" id="1"><task>t</task><config>{"tool": "shell", "command": "ls", "n": [1, 2.5, null, true]}</config></agent></workflow>'
    assert parse_workflow(xml).agents[0].config == {
        "tool": "shell",
        "command": "ls",
        "n": [1, 2.5, None, True],
    }


def test_depends_tolerates_spaces_and_repeats():
    xml = '<workflow name="w" taskId="t"><agent name="llm" id="1"><task>a</task></agent><agent name="llm" id="2"><task>b</task></agent><agent name="llm" id="3" depends=" 1 , 2,1 "><task>c</task></agent></workflow>'
    assert parse_workflow(xml).agents[2].depends == ["1", "2"]


def test_round_trip_of_the_seed_example_and_a_plan_in_progress():
    wf = parse_workflow(SEED_EXAMPLE)
    assert parse_workflow(workflow_to_xml(wf)) == wf
    wf.agents[0].status = "done"
    wf.agents[0].result = "  leading spaces, <tags> & a NUL \x00 kept safe\r\n"
    wf.agents[1].config = {"model": "m", "nested": {"k": ["v", 1]}}
    again = parse_workflow(workflow_to_xml(wf))
    assert again == wf
    assert again.agents[0].result == "  leading spaces, <tags> & a NUL \ufffd kept safe\r\n"


def test_writer_escapes_everything_and_keeps_depends():
    wf = Workflow(
        name='a "quoted" <name> & more',
        task_id="t-1",
        agents=[
            WorkflowAgent(id="1", name="llm", task="x"),
            WorkflowAgent(
                id="2", name="llm", task="</task><agent id='9'>", input="]]> & <", depends=["1"]
            ),
        ],
    )
    xml = workflow_to_xml(wf)
    assert 'depends="1"' in xml and "<agent id='9'>" not in xml
    assert parse_workflow(xml) == wf


def test_positions_point_at_each_agent():
    parsed = parse_workflow_source(SEED_EXAMPLE)
    assert parsed.agent_position(0) == (2, 3)
    assert parsed.agent_position(1) == (5, 3)
    minified = '<workflow name="m" taskId="t"><agent name="llm" id="1"><task>a</task></agent><agent name="llm" id="2"><task>b</task></agent></workflow>'
    parsed = parse_workflow_source(minified)
    assert parsed.agent_position(1) == (1, minified.index('<agent name="llm" id="2"') + 1)


# -- bad input: one exception type, with line, column and an actionable message --------------

BAD_INPUTS = {
    "external entity": (
        '<?xml version="1.0"?>\n<!DOCTYPE workflow [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
        '<workflow name="x" taskId="t"><agent name="llm" id="1"><task>&xxe;</task></agent></workflow>',
        2,
        "DOCTYPE",
    ),
    "billion laughs": (
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
        '<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">]>\n'
        '<workflow name="x"><agent name="llm" id="1"><task>&lol2;</task></agent></workflow>',
        2,
        "DOCTYPE",
    ),
    "plain dtd": ('<!DOCTYPE workflow SYSTEM "http://example.com/x.dtd"><workflow/>', 1, "DOCTYPE"),
    "undeclared entity": (
        '<workflow name="x">\n  <agent name="llm" id="1"><task>&nbsp;</task></agent></workflow>',
        2,
        "&amp;",
    ),
    "bare ampersand": (
        '<workflow name="x">\n<agent name="llm" id="1"><task>A & B</task></agent></workflow>',
        2,
        "&amp;",
    ),
    "binary junk": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", 1, "XML"),
    "empty string": ("", 1, "empty"),
    "only whitespace": ("  \n\t ", 1, "empty"),
    "missing workflow": ("<?xml version='1.0'?>\n<!-- nothing -->", 2, "XML"),
    "wrong root": (
        '<plan><agent name="browser" id="0"><task>x</task></agent></plan>',
        1,
        "<workflow>",
    ),
    "agent without id": (
        '<workflow name="x">\n  <agent name="llm"><task>x</task></agent>\n</workflow>',
        2,
        "no id",
    ),
    "agent without name": (
        '<workflow name="x">\n\n  <agent id="1"><task>x</task></agent></workflow>',
        3,
        "no name",
    ),
    "task missing": (
        '<workflow name="x">\n  <agent name="llm" id="1"><input>x</input></agent></workflow>',
        2,
        "no <task>",
    ),
    "empty task": (
        '<workflow name="x"><agent name="llm" id="1"><task>   </task></agent></workflow>',
        1,
        "the task says what the agent should do",
    ),
    "unclosed tag": (
        '<workflow name="x">\n<agent name="llm" id="1"><task>x</task>\n</workflow>',
        3,
        "matching",
    ),
    "no agents": ('<workflow name="x" taskId="t"/>', 1, "no <agent>"),
    "unknown element": (
        '<workflow name="x"><agent name="llm" id="1"><task>x</task><thought>hm</thought></agent></workflow>',
        1,
        "unknown element <thought>",
    ),
    "unknown attribute": (
        '<workflow name="x"><agent name="llm" id="1" dependsOn="0"><task>x</task></agent></workflow>',
        1,
        "dependsOn",
    ),
    "config not json": (
        '<workflow name="x">\n<agent name="llm" id="1"><task>x</task><config>{tool: 1}</config></agent></workflow>',
        2,
        "not valid JSON",
    ),
    "config not an object": (
        '<workflow name="x"><agent name="llm" id="1"><task>x</task><config>[1]</config></agent></workflow>',
        1,
        "JSON object",
    ),
    "bad id": (
        '<workflow name="x"><agent name="llm" id="a b"><task>x</task></agent></workflow>',
        1,
        "not valid",
    ),
    "bad status": (
        '<workflow name="x"><agent name="llm" id="1" status="finished"><task>x</task></agent></workflow>',
        1,
        "status",
    ),
    "two tasks": (
        '<workflow name="x"><agent name="llm" id="1"><task>x</task><task>y</task></agent></workflow>',
        1,
        "more than one <task>",
    ),
    "markup in task": (
        '<workflow name="x"><agent name="llm" id="1"><task>a <b>bold</b></task></agent></workflow>',
        1,
        "contains elements",
    ),
    "deep nesting": ("<workflow>" + "<a>" * 300 + "</a>" * 300 + "</workflow>", 1, "XML"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_raises_workflow_xml_error_with_position(name):
    text, line, fragment = BAD_INPUTS[name]
    with pytest.raises(WorkflowXMLError) as info:
        parse_workflow(text)
    err = info.value
    assert err.line == line, err.format()
    assert err.column is not None and err.column >= 1
    assert fragment in str(err), str(err)


def test_oversized_input_is_refused_before_parsing():
    big = (
        '<workflow name="x">'
        + '<agent name="llm" id="1"><task>'
        + "x" * 2000
        + "</task></agent></workflow>"
    )
    with pytest.raises(WorkflowXMLError, match="over the 1,000-byte limit"):
        parse_workflow(big, max_bytes=1000)
    assert parse_workflow(big, max_bytes=10_000).agents[0].task == "x" * 2000


def test_default_limit_is_five_megabytes():
    body = "y" * (5 * 1024 * 1024)
    with pytest.raises(WorkflowXMLError, match="5,242,880-byte limit"):
        parse_workflow(
            f'<workflow name="x"><agent name="llm" id="1"><task>{body}</task></agent></workflow>'
        )


def test_several_problems_are_reported_together():
    xml = '<workflow name="x">\n<agent name="llm"><task>a</task></agent>\n<agent id="2"/>\n</workflow>'
    with pytest.raises(WorkflowXMLError) as info:
        parse_workflow(xml)
    lines = [p.line for p in info.value.problems]
    assert lines == [2, 3, 3]  # no id; no name; no task


def test_non_text_input_is_a_workflow_xml_error():
    with pytest.raises(WorkflowXMLError, match="expected the plan as text"):
        parse_workflow(12345)  # type: ignore[arg-type]


def test_bytes_with_a_declared_encoding_are_honoured():
    data = '<?xml version="1.0" encoding="ISO-8859-1"?><workflow name="café" taskId="t"><agent name="llm" id="1"><task>é</task></agent></workflow>'.encode(
        "latin-1"
    )
    assert parse_workflow(data).name == "café"


def test_a_str_with_an_encoding_declaration_is_read_as_the_text_it_is():
    text = '<?xml version="1.0" encoding="ISO-8859-1"?><workflow name="中文" taskId="t"><agent name="llm" id="1"><task>x</task></agent></workflow>'
    assert parse_workflow(text).name == "中文"


# -- extracting a plan from an LLM reply ------------------------------------------------------


def test_extract_from_a_code_fence_with_prose_around():
    reply = f"Sure! Here is the plan:\n\n```xml\n{SEED_EXAMPLE}\n```\n\nLet me know if you need changes."
    assert parse_workflow(extract_workflow_xml(reply)) == parse_workflow(SEED_EXAMPLE)


def test_extract_from_bare_prose_that_mentions_the_tag_first():
    reply = f"I will produce a <workflow> element now.\n{SEED_EXAMPLE}\nDone."
    assert extract_workflow_xml(reply) == SEED_EXAMPLE


def test_extract_repairs_a_reply_cut_off_mid_line():
    cut = (
        SEED_EXAMPLE[: SEED_EXAMPLE.index("</agent>\n</workflow>")]
        + '</agent>\n  <agent name="llm" id="3" dep'
    )
    repaired = extract_workflow_xml("Plan:\n" + cut)
    wf = parse_workflow(repaired)
    assert [a.id for a in wf.agents] == ["1", "2"]


def test_extract_repairs_a_cut_inside_an_element():
    cut = SEED_EXAMPLE[: SEED_EXAMPLE.index("<input>")] + "<input>{{agent_1_res"
    wf = parse_workflow(extract_workflow_xml(cut))
    assert [a.id for a in wf.agents] == ["1", "2"] and wf.agents[1].input is None


def test_extract_without_a_workflow_says_so():
    with pytest.raises(WorkflowXMLError, match="no <workflow> \\(nor Eko.s <root>\\) element"):
        extract_workflow_xml("I cannot help with that.")
    with pytest.raises(WorkflowXMLError, match="empty"):
        extract_workflow_xml("")


def test_a_default_namespace_on_the_root_is_read_past_as_eko_reads_it():
    """`<workflow xmlns="…">` and an Eko `<root xmlns="…">` mean the names they write; they
    were refused ("the root element is <{urn:x}workflow>", "add <agents>")."""
    spaced = SEED_EXAMPLE.replace("<workflow name=", '<workflow xmlns="urn:x" name=', 1)
    assert parse_workflow(spaced) == parse_workflow(SEED_EXAMPLE)
    eko = parse_workflow_source(
        '<root xmlns="http://example.com/eko"><name>N</name><agents>'
        '<agent name="Chat" id="0"><task>say hi</task></agent></agents></root>'
    )
    assert [(a.id, a.name, a.task) for a in eko.workflow.agents] == [("0", "llm", "say hi")]


def test_an_element_of_another_namespace_is_named_as_the_plan_writes_it():
    with pytest.raises(WorkflowXMLError) as e:
        parse_workflow(
            '<workflow xmlns="urn:x" xmlns:x="urn:y" name="n"><agent name="llm" id="1">'
            "<task>t</task><x:note>hi</x:note></agent></workflow>"
        )
    assert "unknown element <x:note> inside <agent>" in str(e.value)
    with pytest.raises(WorkflowXMLError, match=r"the root element is <x:workflow>;"):
        parse_workflow('<x:workflow xmlns:x="urn:y" name="n"/>')


def test_a_start_tag_written_over_several_lines_is_located_where_it_begins():
    """lxml gives the line a start tag ends on; a person looks for the line it begins on."""
    text = '<workflow name="n">\n  <agent\n     name="llm"\n     id="1" bogus="x">\n    <task>t</task>\n  </agent>\n</workflow>\n'
    with pytest.raises(WorkflowXMLError) as e:
        parse_workflow(text)
    assert e.value.problems[0].line == 2 and e.value.problems[0].column == 3, e.value.problems
    eko = parse_workflow_source(
        '<root><name>n</name><agents>\n  <agent\n     name="Chat"\n     id="1" bogus="x">\n'
        "    <task>t</task>\n  </agent></agents>\n</root>\n"
    )
    assert [(p.line, p.column) for p in eko.repairs] == [(2, 3)]


@pytest.mark.parametrize(
    "text, where, tag",
    [
        # libxml2 notices at the next tag (5:3); the one left open ends at 4:10
        ('<workflow name="x">\n  <agent name="llm" id="1">\n    <task>t</task>\n  </agent\n'
         '  <agent name="llm" id="2"><task>u</task></agent>\n</workflow>', (4, 10), "</agent"),
        ('<workflow name="x">\n  <agent name="llm" id="1">\n    <task>ééé</task <x/>\n'
         "  </agent>\n</workflow>", (3, 20), "</task"),
    ],
)  # fmt: skip
def test_a_tag_left_without_its_closing_bracket_is_named_where_it_ends(text, where, tag):
    with pytest.raises(WorkflowXMLError) as info:
        parse_workflow(text)
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == where
    assert f"{tag!r} is not closed: expected '>' after it" in problem.message


def test_attribute_mistakes_say_how_attributes_are_written():
    with pytest.raises(WorkflowXMLError, match="or the '>' of the tag before this point missing"):
        parse_workflow(
            '<workflow name="x">\n<agent name="llm" id="1"\n<task>t</task></agent></workflow>'
        )
    with pytest.raises(WorkflowXMLError, match=r"quoted: name=\"value\""):
        parse_workflow(
            '<workflow name=x><agent name="llm" id="1"><task>t</task></agent></workflow>'
        )


def test_a_fenced_plan_whose_text_holds_backticks_is_found_whole():
    # (found by test_xml_properties: a description "```" ended the fence, cutting the plan)
    plan = (
        '<workflow name="w">\n  <agent name="llm" id="1"><task>quote a fence: ```</task>'
        "</agent>\n</workflow>"
    )
    reply = f"Here it is:\n```xml\n{plan}\n```\nDone."
    assert parse_workflow(extract_workflow_xml(reply)).agents[0].task == "quote a fence: ```"
