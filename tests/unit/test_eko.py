"""Eko's dialect (xsky/plan/eko.py), the repair of a damaged plan (xsky/plan/repair.py) and an
agent's steps (xsky/plan/steps.py): Eko's own plans, taken unchanged, read, convert and round-trip."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from tests.unit.strategies import nonblank_text, steps
from xsky.errors import PlanError, UsageError, WorkflowValidationError, WorkflowXMLError
from xsky.plan import dag
from xsky.plan.eko import workflow_to_eko
from xsky.plan.extract import extract_workflow_xml
from xsky.plan.files import check_plan_source, load_plan
from xsky.plan.models import Step
from xsky.plan.steps import descriptions_as_before_v0_11_5, render_steps
from xsky.plan.xml import parse_workflow, parse_workflow_source, workflow_to_xml
from xsky.security.roles import BUILTIN_ROLES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "tests/fixtures/eko").glob("*.xml"))
KNOWN = list(BUILTIN_ROLES)


def test_there_are_eko_fixtures_of_every_kind():
    names = " ".join(f.name for f in FIXTURES)
    assert len(FIXTURES) >= 8
    for kind in ("forEach", "watch", "dependsOn", "partial", "5agents", "taskless"):
        assert kind in names


@pytest.mark.parametrize(
    "path", [f for f in FIXTURES if "partial" not in f.name], ids=lambda p: p.name
)
def test_eko_plans_validate_convert_and_round_trip(path: Path):
    loaded = load_plan(path, known_agents=KNOWN, base_roles=BUILTIN_ROLES)
    assert loaded.dialect is not None and loaded.dialect.startswith("read as an Eko plan: ")
    parsed = parse_workflow_source(path.read_bytes())
    assert parsed.original == path.read_text()  # the text as written, for an exact round trip
    w = parsed.workflow
    assert parse_workflow(workflow_to_xml(w)) == w  # Eko → native → Workflow
    again = parse_workflow(workflow_to_eko(w))  # Eko → Workflow → Eko → Workflow
    assert again == w
    assert parse_workflow(workflow_to_eko(again)) == w
    assert not dag.validate(w, KNOWN)


def test_a_cut_off_plan_is_refused_where_it_stops_as_eko_refuses_it_and_a_stray_tag_mended():
    """Eko mends a plan cut off only to show it while it streams; its final reading mends
    nothing and runs nothing ("No executable agent"). Mended, what was left of it ran here
    (the last agents and steps missing). A leader replaying a run that read one before
    (patch eko-cut-off-refused) reads it as then."""
    from xsky.plan.repair import cut_off_mended_as_before_v0_11_8, may_be_cut_off

    path = ROOT / "tests/fixtures/eko/08-xml-test-streaming-partial.xml"
    with pytest.raises(WorkflowXMLError) as refused:
        load_plan(path, known_agents=KNOWN)
    [problem] = refused.value.problems
    assert (problem.line, problem.column) == (21, 55)
    assert "cut off" in problem.message and "ask for the plan again" in problem.message
    assert may_be_cut_off(path.read_text()) and not may_be_cut_off(
        (ROOT / "tests/fixtures/eko/05-fellou-social-5agents.xml").read_text()
    )
    with cut_off_mended_as_before_v0_11_8():
        partial = load_plan(path, known_agents=KNOWN)
    [cut] = partial.repairs
    assert (cut.line, cut.column) == (
        21,
        55,
    ) and "</node></nodes></agent></agents></root>" in cut.message
    last = partial.workflow.agents[-1]
    assert last.steps[-1].text == "Send summary message" and last.steps[-1].input == "summaryInfo"
    five = load_plan(ROOT / "tests/fixtures/eko/05-fellou-social-5agents.xml", known_agents=KNOWN)
    [stray] = five.repairs
    assert (stray.line, stray.column) == (50, 1) and "stray </agents>" in stray.message
    assert [a.depends for a in five.workflow.agents] == [[], ["0"], ["0"], ["0"], ["1", "2", "3"]]


def test_a_half_written_tag_is_refused_and_before_it_was_dropped_with_positions():
    from xsky.plan.repair import cut_off_mended_as_before_v0_11_8

    text = '<root><name>R&D</name><agents>\n<agent name="Browser" id="0"><task>a</task></agent>\n<agent name="Fi'
    with pytest.raises(WorkflowXMLError) as refused:
        parse_workflow_source(text)
    assert (refused.value.problems[0].line, refused.value.problems[0].column) == (3, 1)
    with cut_off_mended_as_before_v0_11_8():
        parsed = parse_workflow_source(text)
    said = [(r.line, r.column, r.message) for r in parsed.repairs]
    assert (3, 1) == said[0][:2] and "dropped a tag cut off" in said[0][2]
    assert any((1, 14) == s[:2] and "&amp;" in s[2] for s in said)
    assert parsed.workflow.name == "R&D" and [a.id for a in parsed.workflow.agents] == ["0"]


def test_a_less_than_that_starts_no_tag_is_escaped_as_eko_reads_it():
    """`AT&T … price < 50` in a real planner's Eko plan: refused before ("EntityRef:
    expecting ';'", with no fix), read now with both repairs said; a leader replaying a run
    from before (patch eko-bare-lt-escaped) reads it as then."""
    from xsky.plan.repair import bare_lt_as_before_v0_11_7, may_escape_lt

    text = (
        "<root><name>AT&T plans</name>\n<thought>price < 50 and data >= 10GB; a <= b</thought>\n"
        '<agents><agent name="Browser" id="0"><task>compare</task></agent></agents></root>'
    )
    parsed = parse_workflow_source(text)
    said = [(r.line, r.column, r.message) for r in parsed.repairs]
    assert (1, 15, "repaired: escaped a bare '&' as &amp;") in said
    assert (2, 16, "repaired: escaped a bare '<' as &lt;") in said
    assert (2, 41, "repaired: escaped a bare '<' as &lt;") in said
    assert parsed.workflow.name == "AT&T plans"
    assert may_escape_lt(text) and not may_escape_lt("<root><name>a &amp; b</name></root>")
    with bare_lt_as_before_v0_11_7(), pytest.raises(WorkflowXMLError):
        parse_workflow_source(text)
    # a native plan a person typed stays strict, and says how to write it
    with pytest.raises(WorkflowXMLError) as e:
        parse_workflow_source(
            '<workflow name="x"><agent name="llm" id="1"><task>AT&T</task></agent></workflow>'
        )
    assert "write a literal '&' as &amp;" in e.value.problems[0].message


def test_a_plan_that_cannot_be_repaired_fails_with_line_and_column():
    text = '<root><agents>\n  <agent name="Browser" id=0><task>a</task></agent>\n</agents></root>'
    with pytest.raises(WorkflowXMLError) as e:
        parse_workflow(text + "\n<agents>")  # damaged twice: the unquoted id is not mended
    problem = e.value.problems[0]
    assert problem.line == 2 and problem.column and "not repairable" in problem.message


def test_a_native_plan_stays_strict():
    stray = '<workflow name="x"><agent name="llm" id="1"><task>a</task></agent></agents></workflow>'
    with pytest.raises(WorkflowXMLError, match="XML syntax error") as e:
        parse_workflow(stray)
    assert e.value.problems[0].line == 1
    with pytest.raises(WorkflowXMLError, match="XML syntax error"):
        parse_workflow('<workflow name="x"><agent name="llm" id="1"><task>a')


def _eko(*agents: str, thought: str = "think") -> bytes:
    body = "\n".join(agents)
    return f"<root>\n<name>N</name>\n<thought>{thought}</thought>\n<agents>\n{body}\n</agents>\n</root>".encode()


def test_kinds_are_read_in_any_case_and_chat_computer_have_a_home():
    data = _eko(
        '<agent name="BROWSER" id="0"><task>a</task></agent>',
        '<agent name="file" id="1"><task>a</task></agent>',
        '<agent name="Chat" id="2"><task>a</task></agent>',
        '<agent name="Computer" id="3"><task>a</task></agent>',
    )
    parsed = parse_workflow_source(data)
    assert [a.name for a in parsed.workflow.agents] == ["browser", "file", "llm", "shell"]
    assert parsed.dialect is not None
    assert "1 agent kind(s) lower-cased" in parsed.dialect
    assert "Chat→llm" in parsed.dialect and "Computer→shell" in parsed.dialect


def test_an_unknown_eko_kind_is_refused_like_a_native_one():
    eko = _eko('<agent name="Timer" id="0"><task>every morning</task></agent>')
    native = b'<workflow name="N"><agent name="Timer" id="0"><task>every morning</task></agent></workflow>'
    with pytest.raises(WorkflowValidationError) as from_eko:
        check_plan_source(eko, known_agents=KNOWN)
    with pytest.raises(WorkflowValidationError) as from_native:
        check_plan_source(native, known_agents=KNOWN)
    assert [p.message for p in from_eko.value.problems] == [
        p.message for p in from_native.value.problems
    ]
    assert from_eko.value.problems[0].line == 5


def test_task_less_agents_get_their_steps_thought_or_name():
    parsed = parse_workflow_source(
        _eko(
            '<agent name="Chat" id="0"></agent>',
            '<agent name="Chat" id="1" dependsOn="0"><nodes><node>Say hi</node><node>Wave</node></nodes></agent>',
        )
    )
    assert [a.task for a in parsed.workflow.agents] == ["think", "Say hi; Wave"]
    nameless = parse_workflow(_eko('<agent name="Chat"><task> </task></agent>', thought=""))
    assert nameless.agents[0].task == "N"
    assert parsed.dialect and "task-less" in parsed.dialect


def test_a_v2_plan_without_ids_runs_in_order():
    w = parse_workflow(
        _eko(
            '<agent name="Browser"><task>a</task></agent>',
            '<agent name="File"><task>b</task></agent>',
            '<agent name="Chat"><task>c</task></agent>',
        )
    )
    assert [(a.id, a.depends) for a in w.agents] == [("0", []), ("1", ["0"]), ("2", ["1"])]


def test_an_input_nothing_outputs_is_refused_at_its_line_and_column():
    data = _eko(
        '<agent name="Browser" id="0"><task>a</task><nodes><node output="x">find</node></nodes></agent>',
        '<agent name="File" id="1" dependsOn="0"><task>b</task>\n  <nodes><node input="x,y">use</node></nodes></agent>',
    )
    with pytest.raises(WorkflowValidationError) as e:
        check_plan_source(data, known_agents=KNOWN)
    [problem] = e.value.problems
    assert (problem.line, problem.column) == (7, 10) and 'input="y"' in problem.message
    assert check_plan_source(
        data, known_agents=KNOWN, variables=["y"]
    )  # a workflow variable will do


def test_inside_a_loop_the_item_at_hand_is_an_input_nothing_needs_to_output():
    """Eko's planners write `<node input="item">` inside a forEach (and a watch's trigger):
    the element at hand. It was refused as "no step outputs 'item'"; outside a loop it still is."""
    looped = _eko(
        '<agent name="Browser" id="0"><task>a</task><nodes><node output="list">find them</node>'
        '<forEach items="list"><node input="item">open it</node>'
        '<node input="item,item_index">note where it stands</node></forEach>'
        '<watch event="dom" loop="true"><description>new rows</description>'
        '<trigger><node input="item">read the row</node></trigger></watch></nodes></agent>',
    )
    assert check_plan_source(looped, known_agents=KNOWN)
    outside = _eko(
        '<agent name="Browser" id="0"><task>a</task><nodes><node input="item">x</node></nodes></agent>',
    )
    with pytest.raises(WorkflowValidationError) as e:
        check_plan_source(outside, known_agents=KNOWN)
    assert 'input="item"' in e.value.problems[0].message


def test_a_model_reply_saved_whole_says_where_its_plan_is_and_what_to_save():
    """`validate` of a reply saved as it came (prose, a fence) said "Start tag expected" at 1:1."""
    plan = _eko('<agent name="Browser" id="0"><task>a</task></agent>').decode()
    reply = f"Here is the plan you asked for.\n\n```xml\n{plan}\n```\n\nTell me if it fits.\n"
    with pytest.raises(WorkflowXMLError) as e:
        check_plan_source(reply.encode(), known_agents=KNOWN)
    [problem] = e.value.problems
    last = 4 + plan.count("\n")
    assert (problem.line, problem.column) == (4, 1), problem
    assert f"it runs from line 4 to line {last}; save only <root>…</root>" in problem.message
    # a file that begins with its plan keeps its own problems
    with pytest.raises(WorkflowXMLError) as e:
        check_plan_source(b"<root><agents><agent", known_agents=KNOWN)
    assert not any("inside other text" in p.message for p in e.value.problems)


def test_a_root_said_in_prose_before_the_plan_is_not_taken_for_it():
    plan = _eko('<agent name="Browser" id="0"><task>a</task></agent>').decode()
    reply = f"I answer with the <root> XML format; each <agent> has an id.\n\n{plan}\n"
    assert extract_workflow_xml(reply) == plan


def test_parts_eko_does_not_read_are_left_out_each_with_a_warning_where_it_stands():
    """Tools built on Eko add their own parts (a recorder's <template> of variables, an
    <action> inside a step): Eko's parser passes over them, and so does this one, saying so."""
    text = (
        "<root>\n"
        "  <name>N</name>\n"
        '  <template version="1.0"><variables><variable name="q"/></variables></template>\n'
        "  <agents>\n"
        '    <agent name="Chat" id="0" idx="1"><task>a</task><hint>x</hint></agent>\n'
        "    <note>between</note>\n"
        '    <agent name="Browser" id="1" dependsOn="0"><task>b</task>\n'
        "      <nodes><step/><node>Open\n"
        '        <action type="browser.click"><selector css="#go"/></action> then\n'
        "      </node></nodes></agent>\n"
        "  </agents>\n"
        "</root>"
    )
    parsed = parse_workflow_source(text)
    w = parsed.workflow
    assert [(a.id, a.name, a.depends) for a in w.agents] == [
        ("0", "llm", []),
        ("1", "browser", ["0"]),
    ]
    [step] = w.agents[1].steps
    assert step.text == 'Open <action type="browser.click"><selector css="#go"/></action> then'
    said = {(p.line, p.column): p.message for p in parsed.repairs}
    assert said == {
        (3, 3): "<template> is not part of an Eko plan (name, thought, agents): left out",
        (5, 5): "attribute 'idx' on an Eko <agent> is not Eko's: left out",
        (5, 53): "<hint> inside an Eko <agent> is not Eko's (task, nodes): left out",
        (6, 5): "<note> inside <agents> is not an agent: left out",
        (8, 14): "<step> inside <nodes> is not a step Eko reads: left out",
        (8, 21): "<node> holds elements (<action>): kept in its text as written, for the "
        "agent's model (Eko reads their text alone)",
    }
    assert (
        parsed.dialect is not None
        and "6 part(s) Eko does not read (warnings below)" in parsed.dialect
    )
    assert parse_workflow(workflow_to_xml(w)) == w


def test_what_the_native_form_knows_is_refused_in_an_eko_plan_not_left_out():
    """Left out, a <role> or a `depends` would change what runs: they are refused, with the
    way to keep them."""
    with pytest.raises(WorkflowXMLError) as e:
        parse_workflow(
            b'<root><name>N</name><role name="r"><systemPrompt>s</systemPrompt></role><agents>'
            b'<agent name="Chat" id="0"><task>a</task></agent>'
            b'<agent name="Chat" id="1" depends="0"><task>b</task></agent></agents></root>'
        )
    messages = " | ".join(p.message for p in e.value.problems)
    assert "<role> belongs to a native <workflow>, not an Eko <root>" in messages
    assert "write the native one (`starter.py convert`), then add it there" in messages
    assert "an Eko <agent> says its dependencies in dependsOn, not depends" in messages


def test_a_step_holding_elements_keeps_them_as_written_and_the_nth_tag_of_a_line_is_located():
    parsed = parse_workflow_source(
        '<root><name>N</name><agents><agent name="Browser" id="0" xml:space="default">'
        "<task>t</task><nodes><node>a</node><node>if a &lt; b run <code>x &amp;&amp; y</code>"
        '</node><node xml:space="preserve">keep\n  <b>this</b>\n  lines</node></nodes>'
        "</agent></agents></root>"
    )
    texts = [step.text for step in parsed.workflow.agents[0].steps]
    assert texts == [
        "a",
        "if a &lt; b run <code>x &amp;&amp; y</code>",  # escaped throughout, as XML writes it
        "keep\n  <b>this</b>\n  lines",
    ]
    # the second and third <node> of the line, not the first (nor <nodes>); xml:space is fine
    assert [(p.line, p.column) for p in parsed.repairs] == [(1, 113), (1, 169)]


@pytest.mark.parametrize(
    ("xml", "said"),
    [
        (
            '<root budget="tokens=10"><name>N</name><agents>{agent}</agents></root>',
            "attribute 'budget' is a native <workflow>'s",
        ),
        (
            "<root><name>N</name><agents>{agent}</agents><agents>{agent}</agents></root>",
            "a second <agents>; list every agent in one",
        ),
        (
            "<root><name>N</name><agents>{agent}<group>{agent}</group></agents></root>",
            "<group> inside <agents> holds agents, which Eko runs",
        ),
        (
            '<root><name>N</name><agents><agent name="Chat" id="0"><details><task>real</task>'
            "</details></agent></agents></root>",
            "<details> inside an Eko <agent> holds a <task>, which Eko would read",
        ),
        (
            '<root><name>N</name><agents><agent name="Chat" id="0"><x><task>first</task></x>'
            "<task>own</task></agent></agents></root>",
            "<x> inside an Eko <agent> holds a <task>, which Eko would read",
        ),
        (
            '<root><name>N</name><agents><agent name="Chat" id="0"><task>t</task><nodes>'
            '<forEach items="l"><g><node>x</node></g></forEach></nodes></agent></agents></root>',
            "<g> inside <forEach> holds steps, which Eko would read",
        ),
    ],
)
def test_a_part_left_out_would_change_the_plan_so_it_is_refused(xml: str, said: str) -> None:
    """What Eko would read there (it finds agents, a first task or a forEach's nodes with
    getElementsByTagName, wherever they stand), and a budget, which means a ceiling: none is
    left out quietly, and each is said once."""
    agent = '<agent name="Chat" id="0"><task>a</task></agent>'
    with pytest.raises(WorkflowXMLError) as e:
        parse_workflow(xml.format(agent=agent))
    messages = [p.message for p in e.value.problems]
    assert any(said in m for m in messages), messages
    assert len(messages) == len(set(messages)) == 1, messages


@pytest.mark.parametrize(
    "xml",
    [
        # a recorder's template whose fields have plan-like names: Eko does not look inside
        '<root><name>N</name><template><f><task>q</task><agent name="x"/></f></template>'
        "<agents>{agent}</agents></root>",
        # <nodes>' children only are steps to Eko
        '<root><name>N</name><agents><agent name="Chat" id="0"><task>t</task><nodes>'
        "<group><node>x</node></group><node>y</node></nodes></agent></agents></root>",
        # after the agent's own task, another is not read
        '<root><name>N</name><agents><agent name="Chat" id="0"><task>t</task>'
        "<examples><task>x</task><node>z</node></examples></agent></agents></root>",
    ],
)
def test_what_eko_would_not_read_is_left_out_even_when_it_looks_like_the_plan(xml: str) -> None:
    agent = '<agent name="Chat" id="0"><task>a</task></agent>'
    parsed = parse_workflow_source(xml.format(agent=agent))
    assert len(parsed.workflow.agents) == 1
    assert parsed.repairs and all("left out" in p.message for p in parsed.repairs)


def test_native_plans_carry_steps_too():
    text = """<workflow name="n">
  <agent name="browser" id="1">
    <task>jobs</task>
    <nodes>
      <node output="jobs">list them</node>
      <forEach items="jobs"><node input="jobs">read one</node></forEach>
      <watch event="dom" loop="true"><description>new</description><trigger><node>reply</node></trigger></watch>
    </nodes>
  </agent>
</workflow>"""
    w = parse_workflow(text)
    assert [s.kind for s in w.agents[0].steps] == ["node", "forEach", "watch"]
    assert w.agents[0].steps[2].loop and w.agents[0].steps[2].steps[0].text == "reply"
    assert parse_workflow(workflow_to_xml(w)) == w
    with pytest.raises(WorkflowXMLError, match=r"unknown element <step> inside <nodes>"):
        parse_workflow(text.replace("<node>reply</node>", "").replace("<nodes>", "<nodes><step/>"))


def test_a_native_watch_description_that_holds_elements_is_kept_whole_as_text():
    """It was cut at its first element without a word ("Price of "); refusing it instead would
    fail a run whose history holds such a replan, read again as it was accepted."""
    text = """<workflow name="n"><agent name="browser" id="1"><task>t</task><nodes>
      <watch event="dom" loop="false"><description>Price of <b>AAPL &amp; co</b>
        moves</description><trigger><node>say so</node></trigger></watch>
    </nodes></agent></workflow>"""
    w = parse_workflow(text)
    assert w.agents[0].steps[0].description == "Price of <b>AAPL &amp; co</b> moves"
    assert parse_workflow(workflow_to_xml(w)) == w
    kept = parse_workflow(text.replace("<description>", '<description xml:space="preserve">'))
    assert kept.agents[0].steps[0].description == "Price of <b>AAPL &amp; co</b>\n        moves"
    # as a run that read it before v0.11.5 reads it again (workflows/leader/io.read_plan_xml)
    with descriptions_as_before_v0_11_5():
        assert parse_workflow(text).agents[0].steps[0].description == "Price of"
    assert parse_workflow(text).agents[0].steps[0].description.endswith("moves")  # only inside


def test_writing_in_eko_form_refuses_what_eko_cannot_hold():
    w = parse_workflow(
        '<workflow name="n"><agent name="llm" id="1"><task>a</task><input>x</input></agent></workflow>'
    )
    with pytest.raises(UsageError, match="agent 1's <input>"):
        workflow_to_eko(w)


def test_steps_are_rendered_as_a_numbered_plan():
    rendered = render_steps(
        [
            Step(text="Open", output="list"),
            Step(kind="forEach", items="list", steps=[Step(text="Read")]),
            Step(
                kind="watch",
                event="dom",
                loop=False,
                description="a change",
                steps=[Step(text="Reply")],
            ),
        ]
    )
    assert rendered.splitlines() == [
        "Steps (follow them in order):",
        "1. Open (its result is list)",
        "2. For each item of list, do:",
        "   2.1. Read",
        "3. Watch for a dom event: a change; once it happens, do:",
        "   3.1. Reply",
    ]
    assert render_steps([]) == ""


def test_the_planner_may_answer_in_eko_form_and_a_reply_cut_off_is_asked_again():
    eko = (ROOT / "tests/fixtures/eko/02-ai-news-dependsOn-computer.xml").read_text()
    reply = f"Here is the plan:\n```xml\n{eko}```\nAnything else?"
    found = parse_workflow(extract_workflow_xml(reply))
    assert found == parse_workflow(eko).model_copy(update={"task_id": found.task_id})
    # A reply that ran out of tokens: refused where it stops (the planner asks again with the
    # problem), not run without its end
    cut = extract_workflow_xml("Sure: " + eko[: eko.index("Send summary")])
    with pytest.raises(WorkflowXMLError, match="cut off"):
        parse_workflow_source(cut)


# -- property: every valid Eko plan maps to a valid native plan, same graph, same steps --------

_EKO_KINDS = st.sampled_from(["Browser", "browser", "BROWSER", "File", "Chat", "Computer", "chat"])


@st.composite
def eko_plans(draw: st.DrawFn) -> tuple[bytes, list[list[str]], list[list[Step]]]:
    """An Eko plan's bytes, written here with lxml (not by the writer under test), and the
    dependencies and steps each agent should get."""
    n = draw(st.integers(1, 6))
    root = etree.Element("root")
    etree.SubElement(root, "name").text = draw(nonblank_text)
    agents = etree.SubElement(root, "agents")
    depends, all_steps = [], []
    for i in range(n):
        deps = sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)), key=int) if i else []
        agent_steps = draw(steps)
        el = etree.SubElement(agents, "agent", name=draw(_EKO_KINDS), id=str(i))
        el.set("dependsOn", ",".join(str(d) for d in deps))
        etree.SubElement(el, "task").text = draw(nonblank_text)
        _eko_steps(el, agent_steps)
        depends.append([str(d) for d in deps])
        all_steps.append(agent_steps)
    return etree.tostring(root), depends, all_steps


def _eko_steps(parent: etree._Element, agent_steps: list[Step]) -> None:
    if not agent_steps:
        return
    nodes = etree.SubElement(parent, "nodes")

    def write(under: etree._Element, steps_: list[Step]) -> None:
        for s in steps_:
            if s.kind == "node":
                el = etree.SubElement(under, "node")
                el.text = s.text
                if s.text.strip() != s.text or "\n" in s.text or "\r" in s.text:
                    el.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
                for attr in ("input", "output"):
                    if getattr(s, attr) is not None:
                        el.set(attr, getattr(s, attr))
            elif s.kind == "forEach":
                el = etree.SubElement(under, "forEach")
                if s.items is not None:
                    el.set("items", s.items)
                write(el, s.steps)
            else:
                el = etree.SubElement(under, "watch", loop="true" if s.loop else "false")
                if s.event is not None:
                    el.set("event", s.event)
                if s.description is not None:
                    d = etree.SubElement(el, "description")
                    d.text = s.description
                    d.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
                write(etree.SubElement(el, "trigger"), s.steps)

    write(nodes, agent_steps)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(eko_plans())
def test_every_eko_plan_maps_to_a_valid_native_plan_with_the_same_graph_and_steps(plan):
    data, depends, agent_steps = plan
    w = parse_workflow(data)
    assert not dag.validate(w, KNOWN)
    assert [a.depends for a in w.agents] == depends
    assert [a.steps for a in w.agents] == agent_steps
    assert parse_workflow(workflow_to_xml(w)) == w
    assert parse_workflow(workflow_to_eko(w)) == w


def test_convert_writes_the_native_plan_and_says_what_it_mapped(tmp_path: Path):
    out = tmp_path / "native.xml"
    source = ROOT / "tests/fixtures/eko/05-fellou-social-5agents.xml"
    res = subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), "convert", str(source), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stderr.split())
    assert "read as an Eko plan: <root>→<workflow>, dependsOn→depends" in said
    assert "05-fellou-social-5agents.xml:50:1: repaired: removed a stray </agents>" in said
    native = out.read_text()
    assert native.startswith("<workflow ") and parse_workflow(native) == parse_workflow(
        source.read_bytes()
    ).model_copy(update={"task_id": parse_workflow(native).task_id})


def test_plan_errors_stay_plan_errors():
    with pytest.raises(PlanError):
        parse_workflow("<root>")


def test_convert_keeps_the_plans_thought_both_ways(tmp_path: Path) -> None:
    """`convert` dropped an Eko plan's <thought> (the planner's reasoning, for the person who
    reads the plan): it rides in the native plan as a comment, and back into <thought>."""
    from cli.main import main

    eko = tmp_path / "plan.xml"
    eko.write_bytes(
        _eko(
            '<agent name="Browser" id="0"><task>a</task></agent>',
            thought="Look first -- then act &amp; report",
        )
    )
    native, back = tmp_path / "native.xml", tmp_path / "back.xml"
    assert main(["convert", str(eko), "-o", str(native)]) == 0
    text = native.read_text()
    assert "<!-- Eko thought: Look first - - then act & report -->" in text
    parse_workflow_source(text)  # still a native plan that reads
    from xsky.plan.eko import thought_comment

    for odd in ("a --- b", "a ---- b -", "---"):  # each still a comment XML can hold
        parse_workflow_source(
            f'<workflow name="x">{thought_comment(odd)}<agent name="llm" id="1"><task>t</task></agent></workflow>'
        )
    assert main(["convert", str(native), "--to", "eko", "-o", str(back)]) == 0
    assert "<thought>Look first - - then act &amp; report</thought>" in back.read_text()


def test_empty_steps_are_warned_of_where_they_stand(tmp_path: Path) -> None:
    """An LLM planner writes `<node/>` and a `<forEach>` with nothing in it: they ran silently
    as empty steps ("1. ", "2. "); validate now says where they are (they still run, as in Eko)."""
    path = tmp_path / "plan.xml"
    path.write_bytes(
        _eko(
            '<agent name="Browser" id="0"><task>a</task><nodes><node output="l">find</node>\n'
            "<node/>\n<node>   </node>\n"
            '<forEach items="l"></forEach></nodes></agent>'
        )
    )
    plan = load_plan(path, known_agents=KNOWN)
    said = [(w.line, w.message) for w in plan.warnings if "agent 0, step" in w.message]
    assert said == [
        (
            6,
            "agent 0, step 2 is empty: it gives the agent nothing to do; write what the step does, or remove it",
        ),
        (
            7,
            "agent 0, step 3 is empty: it gives the agent nothing to do; write what the step does, or remove it",
        ),
        (
            8,
            "agent 0, step 4 (<forEach>) holds no steps: it does nothing for each item; give it steps, or remove it",
        ),
    ]


def test_an_eko_watch_of_a_file_says_it_is_only_an_instruction(tmp_path: Path) -> None:
    """An Eko <watch event="file"> ran as one model reply and the run completed, no firing:
    nothing watched, and nothing said so."""
    path = tmp_path / "plan.xml"
    path.write_bytes(
        _eko(
            '<agent name="File" id="0"><task>watch notes</task><nodes><watch event="file" loop="true">'
            "<description>notes.txt changes</description><trigger><node>summarise</node></trigger>"
            "</watch></nodes></agent>"
        )
    )
    said = [w.message for w in load_plan(path, known_agents=KNOWN).warnings]
    assert any(
        '<watch event="file"> is given to the model as an instruction' in m
        and '"event": "file", "path"' in m
        for m in said
    ), said


def test_an_eko_dom_watch_that_is_not_made_durable_says_so(tmp_path: Path) -> None:
    """A <watch event="dom"> is made durable only after steps that open its page (the page's
    URL is what the watch polls): one as an agent's first step (Eko's own xml.test.ts "should
    parse watch nodes" plan) or an agent's second watch stayed a model instruction, silently."""
    watch = (
        '<watch event="dom" loop="true"><description>Monitor DOM changes</description>'
        "<trigger><node>Check if changed</node></trigger></watch>"
    )
    path = tmp_path / "plan.xml"
    path.write_bytes(
        _eko(
            f'<agent name="Browser" id="0"><task>first</task><nodes>{watch}</nodes></agent>'
            f'<agent name="Browser" id="1"><task>second</task><nodes><node>Open https://a.example'
            f"</node>{watch}{watch}</nodes></agent>"
        )
    )
    said = [
        (w.agent_id, w.step, w.message)
        for w in load_plan(path, known_agents=KNOWN).warnings
        if "<watch" in w.message
    ]
    assert [(a, s) for a, s, _ in said] == [("0", (0,)), ("1", (2,))], said
    assert "no step before it opens the page it watches" in said[0][2]
    assert "only an agent's first watch" in said[1][2]


def test_the_leader_reads_a_cut_off_replan_as_the_run_first_read_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that took a cut-off Eko replan before v0.11.8 ran what was left of it: replaying
    it, the leader must read it so again (patch eko-cut-off-refused, asked only of XML that is
    cut off — no marker in any other run's history)."""
    import workflows.leader.io as leader_io

    asked: list[str] = []
    answer = {"eko-cut-off-refused": False}

    def patched(patch_id: str) -> bool:
        asked.append(patch_id)
        return answer.get(patch_id, True)

    monkeypatch.setattr(leader_io, "patched", patched)
    whole = (ROOT / "tests/fixtures/eko/02-ai-news-dependsOn-computer.xml").read_text()
    cut = whole[: whole.index("Send summary")]
    assert leader_io.read_plan_xml(whole).workflow.agents
    assert "eko-cut-off-refused" not in asked
    assert leader_io.read_plan_xml(cut).repairs  # an older run: mended, as it was then
    assert "eko-cut-off-refused" in asked
    answer["eko-cut-off-refused"] = True
    with pytest.raises(WorkflowXMLError, match="cut off"):
        leader_io.read_plan_xml(cut)


BRACED = """<root><name>Braced items</name><agents>
  <agent name="Browser" id="0" dependsOn=""><task>List developers</task>
    <nodes><node output="{{developers}}">Extract the developers</node></nodes></agent>
  <agent name="Browser" id="1" dependsOn="0"><task>Visit each developer</task>
    <nodes><node>Open GitHub</node>
      <forEach items="{{developers}}"><node>Visit the developer's page</node></forEach></nodes></agent>
</agents></root>"""


def test_a_name_written_as_a_reference_is_the_name_and_its_loop_reads_the_agent_that_outputs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """items="{{developers}}" (as planners write it) made the loop ask a list agent for a list
    named "{{developers}}" and fail at run time ("has no value; pass --var"); agent 0 writes it."""
    import workflows.leader.io as leader_io
    from xsky.plan.loops import lower

    wf = parse_workflow(BRACED)
    assert wf.agent("1").steps[1].items == "developers"
    assert wf.agent("0").steps[0].output == "developers"
    lowered, _ = lower(wf)
    assert lowered.agent("1").for_each == "{{agent_0_result}}"
    assert [a.id for a in lowered.agents] == ["0", "1"]  # no "1.list" asked for it
    # a leader replaying a run that read it before reads it as then (patch eko-braced-names)
    answers = {"eko-braced-names": False}
    monkeypatch.setattr(leader_io, "patched", lambda patch_id: answers.get(patch_id, True))
    assert leader_io.read_plan_xml(BRACED).workflow.agent("1").steps[1].items == "{{developers}}"
    answers["eko-braced-names"] = True
    assert leader_io.read_plan_xml(BRACED).workflow.agent("1").steps[1].items == "developers"


def test_a_step_reading_what_a_later_agent_outputs_is_a_problem_not_a_run_that_never_starts():
    """Agent 0 reads "summary", agent 1 (after 0) writes it: passing it made 0 wait for 1 and
    1 for 0 — validate said nothing, and the run stood with both pending."""
    from xsky.plan.planning import check_plan

    text = """<root><name>Order</name><agents>
      <agent name="Chat" id="0" dependsOn=""><task>a</task><nodes><node input="summary">use it</node></nodes></agent>
      <agent name="Chat" id="1" dependsOn="0"><task>b</task><nodes><node output="summary">write it</node></nodes></agent>
    </agents></root>"""
    with pytest.raises(WorkflowValidationError) as e:
        check_plan_source(text.encode(), known_agents=KNOWN)
    said = " ".join(p.message for p in e.value.problems)
    assert 'agent 0 reads "summary"' in said and "agent 1 runs after agent 0" in said
    with pytest.raises(WorkflowValidationError):  # the planner's check too: it asks again
        check_plan(parse_workflow(text), KNOWN)


def test_a_reply_that_thinks_first_or_corrects_itself_is_read_for_the_plan_it_answers():
    eko = (ROOT / "tests/fixtures/eko/02-ai-news-dependsOn-computer.xml").read_text()
    sketch = '<root>\n  <name>…</name>\n  <agents>…<agent name="…">…</agent></agents>\n</root>'
    thought = f"<think>\nI must answer in the format:\n{sketch}\nLet me plan.\n</think>\n{eko}"
    assert parse_workflow(extract_workflow_xml(thought)).name == parse_workflow(eko).name
    corrected = eko.replace("<name>Latest AI News</name>", "<name>Corrected</name>")
    reply = f"{eko}\n\nWait — that is wrong. Corrected plan:\n\n{corrected}\nDone."
    assert parse_workflow(extract_workflow_xml(reply)).name == "Corrected"


@pytest.mark.parametrize("where", ["after", "thinking"])
def test_a_plan_saved_with_other_text_around_it_says_where_the_plan_is(tmp_path: Path, where: str):
    eko = (ROOT / "tests/fixtures/eko/02-ai-news-dependsOn-computer.xml").read_text()
    text = (
        f"{eko}\nThis plan first collects the news.\n"
        if where == "after"
        else (f"<think>\nanswer as <root><agents><agent/></agents></root>\n</think>\n{eko}")
    )
    path = tmp_path / "reply.md"
    path.write_text(text)
    with pytest.raises(WorkflowXMLError) as e:
        load_plan(path, known_agents=KNOWN)
    said = e.value.problems[0].message
    assert "the plan is inside other text" in said and "save only <root>…</root>" in said


def test_a_plan_with_comments_and_a_declaration_around_it_is_said_its_own_problems(
    tmp_path: Path,
):
    # as every file of examples/ begins: a comment, then the plan
    path = tmp_path / "p.xml"
    path.write_text(
        '<?xml version="1.0"?>\n<!-- a chain -->\n<workflow name="x" foo="bar">'
        '<agent name="llm" id="1"><task>hi</task></agent></workflow>\n<!-- the end -->\n'
    )
    with pytest.raises(WorkflowXMLError) as e:
        load_plan(path, known_agents=KNOWN)
    (problem,) = e.value.problems
    assert "unknown attribute 'foo' on <workflow>" in problem.message and problem.line == 3


def test_braces_in_an_eko_plans_text_say_what_an_eko_plan_can_do_about_them(tmp_path: Path):
    # "declare it in <variables>" cannot be followed: <variables> is refused inside <root>
    path = tmp_path / "p.xml"
    path.write_text(
        '<root><name>n</name><agents><agent name="Chat" id="0" dependsOn="">'
        "<task>Reply with the template: Hello {{name}}</task></agent></agents></root>"
    )
    with pytest.raises(PlanError) as e:
        load_plan(path, known_agents=KNOWN)
    said = e.value.problems[0].message
    assert "<variables>" not in said and "--var name=…" in said and "Eko passes the text" in said


def test_an_html_entity_in_an_eko_plans_text_is_its_character_as_eko_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import workflows.leader.io as leader_io

    text = (
        '<root><name>Prices&nbsp;today</name><agents><agent name="Chat" id="0" dependsOn="">'
        "<task>Say &ldquo;hi&rdquo; &amp; go</task></agent></agents></root>"
    )
    parsed = parse_workflow_source(text)
    assert parsed.workflow.name == "Prices\u00a0today"
    assert parsed.workflow.agents[0].task == "Say “hi” & go"
    assert any("replaced the HTML entity &nbsp;" in r.message for r in parsed.repairs)
    answers = {"eko-html-entities": False}
    monkeypatch.setattr(leader_io, "patched", lambda patch_id: answers.get(patch_id, True))
    with pytest.raises(WorkflowXMLError):  # a run that read it before refused it: as then
        leader_io.read_plan_xml(text)


def test_a_duplicate_id_is_said_once_and_a_separator_that_looks_like_a_comma_is_named():
    dup = """<root><name>n</name><agents>
      <agent name="Chat" id="0" dependsOn=""><task>a</task></agent>
      <agent name="Chat" id="0" dependsOn="0"><task>b</task></agent></agents></root>"""
    with pytest.raises(PlanError) as e:
        check_plan_source(dup.encode(), known_agents=KNOWN)
    said = [p.message for p in e.value.problems]
    assert len(said) == 1 and "duplicate agent id '0'" in said[0]  # not also "depends on itself"
    wide = """<root><name>n</name><agents>
      <agent name="Chat" id="0" dependsOn=""><task>a</task></agent>
      <agent name="Chat" id="1" dependsOn=""><task>b</task></agent>
      <agent name="Chat" id="2" dependsOn="0，1"><task>c</task></agent></agents></root>"""
    with pytest.raises(PlanError) as e:
        check_plan_source(wide.encode(), known_agents=KNOWN)
    assert "U+FF0C, is no separator: write ','" in e.value.problems[0].message


def test_an_html_entity_that_stands_for_markup_stays_text_and_braces_anywhere_ask_the_patch():
    from xsky.plan.steps import may_hold_braced_names

    # &LT;/node&GT; is text in Eko: decoded before escaping, it made a step nobody wrote
    text = (
        '<root><name>n</name><agents><agent name="Chat" id="0" dependsOn=""><task>t</task>'
        "<nodes><node>write the text &LT;/node&GT;&LT;node&GT;second step</node></nodes>"
        "</agent></agents></root>"
    )
    (step,) = parse_workflow(text).agents[0].steps
    assert step.text == "write the text </node><node>second step"
    # a braced name anywhere in the value is read differently now: the patch is asked of it
    assert may_hold_braced_names('<node input="devs_{{team}}">x</node>')
    assert not may_hold_braced_names('<node input="devs">{{x}}</node>')
    assert may_hold_braced_names("""<forEach items="Bob's {{team}}">""")  # its own quote closes it
    assert may_hold_braced_names('<forEach items="&#123;&#123;team}}">')  # braces as references


def test_a_lower_case_dependson_is_warned_of_with_the_name_eko_reads() -> None:
    text = """<root><name>n</name><agents>
      <agent name="Chat" id="0" dependson=""><task>collect prices</task></agent>
      <agent name="Chat" id="1" dependson="0"><task>write prices.csv</task></agent></agents></root>"""
    parsed = parse_workflow_source(text)
    said = [r.message for r in parsed.repairs]
    assert any("did you mean 'dependsOn'?" in m for m in said), said


def test_a_forEach_that_stays_an_instruction_is_warned_of(tmp_path: Path) -> None:
    """A second loop of an agent, a loop inside a step, a list from nowhere: not made durable,
    silently (the model went through the items in one attempt)."""
    path = tmp_path / "p.xml"
    path.write_text(
        """<root><name>n</name><agents><agent name="Chat" id="0" dependsOn=""><task>t</task><nodes>
          <node output="a">list a</node>
          <forEach items="a"><node>do a</node><forEach items="b"><node>inner</node></forEach></forEach>
          <forEach items="a"><node>again</node></forEach>
        </nodes></agent></agents></root>"""
    )
    loaded = load_plan(path, known_agents=KNOWN)
    said = [w.message for w in loaded.warnings if "(<forEach>)" in w.message]
    assert len(said) == 2, said
    assert "step 2.2 (<forEach>): inside another step" in said[0]
    assert "step 3 (<forEach>): not the agent's first loop" in said[1]


def test_an_eko_v1_json_plan_is_said_to_be_one(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(
        '{"id": "w1", "name": "x", "nodes": [{"id": "n1", "action": {}}], "dependencies": []}'
    )
    with pytest.raises(WorkflowXMLError) as e:
        load_plan(path, known_agents=KNOWN)
    said = e.value.problems[0].message
    assert "Eko v1's plan format" in said and "written as XML" in said


def test_eko_status_and_a_capital_loop_are_read_and_a_replay_from_before_refuses_them_still():
    from xsky.plan.steps import attributes_as_before_v0_11_9, may_hold_lenient_attributes

    eko = """<root><name>w</name><agents>
      <agent name="Browser" id="0" dependsOn="" status="init"><task>watch the chat</task>
      <nodes><node>open https://chat.example</node>
      <watch event="dom" loop="True"><description>new message</description>
      <trigger><node>reply</node></trigger></watch></nodes></agent></agents></root>"""
    assert may_hold_lenient_attributes(eko)
    assert not may_hold_lenient_attributes(
        eko.replace(' status="init"', "").replace("True", "true")
    )
    parsed = parse_workflow_source(eko)
    (agent,) = parsed.workflow.agents
    assert agent.steps[1].kind == "watch" and agent.steps[1].loop is True
    assert any("status='init'" in r.message for r in parsed.repairs)
    with attributes_as_before_v0_11_9(), pytest.raises(WorkflowXMLError) as refused:
        parse_workflow_source(eko)
    said = " ".join(p.message for p in refused.value.problems)
    assert "status" in said and 'must be "true" or "false"' in said


def test_a_task_name_or_thought_that_holds_markup_is_read_whole_as_eko_reads_its_text(
    monkeypatch: pytest.MonkeyPatch,
):
    """Eko reads an agent's task, the plan's name and its thought as `textContent`
    (packages/eko-core/src/common/xml.ts, parseWorkflow), so a browser plan whose task names an
    element runs there. Here the task was refused ("contains elements"), and a name or thought
    holding one was cut at it, with no word: `Report on` and a Chat agent told `The user wants
    the`."""
    text = (
        "<root>\n"
        "  <name>Report on <em>AI</em> news</name>\n"
        "  <thought>The user wants the <b>latest</b> AI news.</thought>\n"
        "  <agents>\n"
        '    <agent name="Chat" id="0" dependsOn=""></agent>\n'
        '    <agent name="Browser" id="1" dependsOn="0">\n'
        "      <task>Click the <button> labelled Next until it is gone</task>\n"
        "    </agent>\n"
        "  </agents>\n"
        "</root>"
    )
    parsed = parse_workflow_source(text)
    w = parsed.workflow
    assert w.name == "Report on AI news"
    assert w.agents[0].task == "The user wants the latest AI news."
    assert w.agents[1].task == "Click the <button> labelled Next until it is gone</button>"
    said = {(p.line, p.column): p.message for p in parsed.repairs}
    assert said[(7, 7)] == (
        "<task> holds elements (<button>): kept in its text as written, for the agent's model "
        "(Eko reads their text alone)"
    )
    assert parse_workflow(workflow_to_xml(w)) == w
    # a leader replaying a run that read it before reads it as then (patch eko-markup-read-whole)
    import workflows.leader.io as leader_io
    from xsky.plan.eko import may_hold_markup

    assert may_hold_markup(text) and not may_hold_markup(
        text.replace("<em>AI</em>", "AI").replace("<b>latest</b>", "latest").replace("<button>", "")
    )
    answers = {"eko-markup-read-whole": False}
    monkeypatch.setattr(leader_io, "patched", lambda patch_id: answers.get(patch_id, True))
    with pytest.raises(WorkflowXMLError, match="contains elements"):
        leader_io.read_plan_xml(text)
    answers["eko-markup-read-whole"] = True
    again = leader_io.read_plan_xml(text).workflow  # (a fresh taskId each read)
    assert (again.name, again.agents) == (w.name, w.agents)


def test_a_browser_agent_after_another_is_not_warned_it_starts_on_a_page_of_its_own(
    tmp_path: Path,
):
    """A real Eko v3 plan (an E2E test a user had Eko write): agent 0 logs in, agent 1 reads
    the dashboard. In Eko they share one page; v0.11.11 warned that here agent 1 started on a
    blank page of its own. It continues the page agent 0 left now (tests/unit/test_tools.py:
    test_a_browser_agent_continues_the_page_the_agent_it_depends_on_left), so no warning."""
    path = tmp_path / "e2e.xml"
    path.write_text(
        "<root><name>E2E</name><agents>"
        '<agent name="Browser" id="0" dependsOn=""><task>Log in</task><nodes>'
        "<node>Navigate to http://localhost:5000/login</node><node>Click login</node>"
        "</nodes></agent>"
        '<agent name="Browser" id="1" dependsOn="0"><task>Validate the KPIs</task><nodes>'
        "<node>Locate KPI cards</node></nodes></agent>"
        '<agent name="Chat" id="2" dependsOn="1"><task>Report</task></agent>'
        "</agents></root>"
    )
    loaded = load_plan(path, known_agents=KNOWN, base_roles=BUILTIN_ROLES)
    assert [w.message for w in loaded.warnings if "page" in w.message] == []


_OLD_TOKEN = re.compile(  # the scan's tokens as one regular expression found them (quadratic)
    r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>"
    r"|<(/?)([A-Za-z_][\w:.-]*)((?:\"[^\"]*\"|'[^']*'|[^'\"<>])*?)(/?)>",
    re.S,
)


@given(
    st.lists(
        st.sampled_from(
            [
                "<!--",
                "-->",
                "<![CDATA[",
                "]]>",
                "<?",
                "?>",
                "<a",
                "</a>",
                "<b x='<'>",
                ">",
                "<",
                " ",
                "t",
                '"',
                "'",
                "/>",
                "<!",
                "-",
                "]",
                "?",
            ]
        ),
        max_size=40,
    ).map("".join)
)
def test_the_repair_scan_finds_the_tokens_the_regular_expression_found(text: str):
    from xsky.plan.repair import _tokens

    assert [(s, e, g) for s, e, g in _tokens(text)] == [
        (m.start(), m.end(), m.groups()) for m in _OLD_TOKEN.finditer(text)
    ]


@pytest.mark.parametrize(
    "opener", ["<![CDATA[", "<!--", "<?", "<task ", "<agent ", "<name "], ids=repr
)
def test_a_plan_of_many_unclosed_openers_is_read_in_linear_time(opener: str):
    """A plan (a planner's reply, a replan — read in the leader's workflow task, where Python's
    re holds the worker's every thread) with 20,000 unclosed '<![CDATA[' took 12 s to read,
    a comment of '<task ' 30 s, 26 leading spaces seconds: each grew with the square of its
    length (or faster). Bounded far above what a linear reading takes (milliseconds)."""
    import time

    from xsky.plan.eko import is_eko, may_hold_markup
    from xsky.plan.repair import may_be_cut_off
    from xsky.plan.steps import may_hold_lenient_attributes

    head = '<root><name>N</name><agents><agent name="Chat" id="0"><task>'
    for text in (
        head + opener * 40_000,
        " " * 40 + "<workflow/>",
        f"{head}</task></agent></agents></root><!-- {opener * 40_000} -->",
    ):
        began = time.perf_counter()
        for check in (is_eko, may_hold_markup, may_be_cut_off, may_hold_lenient_attributes):
            check(text)
        with contextlib.suppress(WorkflowXMLError):
            parse_workflow_source(text)
        assert time.perf_counter() - began < 5, (opener, len(text))


def test_agents_one_level_too_high_are_one_problem_not_three_that_contradict() -> None:
    # (a real Eko derivative's single-agent form, real10: "add <agents>", "the workflow has no
    # <agent> elements" and "an <agent> directly under <root>: wrap the agents" at once)
    text = (
        "<root><name>Backup</name><thought>t</thought>"
        '<agent name="Shell"><task>back up</task></agent>'
        '<agent name="Shell"><task>check it</task></agent></root>'
    )
    with pytest.raises(WorkflowXMLError) as e:
        parse_workflow(text)
    problems = [p.message for p in e.value.problems]
    assert len(problems) == 1 and "wrap the agents in one" in problems[0], problems
