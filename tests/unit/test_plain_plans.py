"""The plain path reads a plan exactly as the Reader does, or leaves it to the Reader.

Hypothesis writes plans from the pieces a plan is made of, plain and not (loose text,
repeated or unknown parts, odd depends, entities, CDATA, comments, xml:space, JSON that is
not an object, roles, schema files): whatever the plain path answers must be what the
Reader reads, and a plan the Reader refuses must never get through it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from xsky.errors import WorkflowXMLError
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.plain_plans import read_plain
from xsky.plan.xml import (
    _PLAIN_OPTIONS,
    Reader,
    _parse_tree,
    _parser_for,
    parse_workflow,
    workflow_to_xml,
)


def mostly(plain: list[object], odd: list[object]) -> st.SearchStrategy[object]:
    """A plain choice but one time in 40: a plan has 20-40 choices, so some come out whole,
    some with one odd part, few with many (Hypothesis likes the ends of a range: 17 is not)."""
    return st.integers(0, 39).flatmap(lambda n: st.sampled_from(odd if n == 17 else plain))


TEXTS = mostly(
    [
        "Summarize the report",
        "  edges  ",
        "\n    indented\n      more\n    ",
        "a &amp; b &lt;c&gt;",
        "<![CDATA[<raw> & text]]>",
        "before<!-- a comment -->after",
        "{{agent_1_result}}",
        "&#x41;&#66;",
    ],
    ["", "   ", "x<b>nested</b>"],
)
CONFIGS = mostly(
    [
        '{"tool": "shell", "command": "ls"}',
        "{}",
        '\n  {"model": "m"}\n',
        '{"output": {"type": "string"}}',
    ],
    ["", "[1]", "{tool: 1}", "null", '{"a": NaN}'],
)
OUTPUTS = mostly(['{"type": "object"}', '{"type": "string"}'], ["null", "", "[1]", "nope"])
DEPENDS = mostly([None, "1", "1,2", "2,2", "x_y.z-1"], ["1, 2", "", ",1", "1,,2", "a b", "1\t,2"])
IDS = mostly(["1", "2", "3", "x_y.z-1"], ["a b", "", None])
NAMES = mostly(["llm", "shell", "browser"], ["", "9bad", None])
STATUS = mostly([None, "init", "done", "error"], ["bogus"])
SPACE = mostly(["", ' xml:space="preserve"', ' xml:space="default"'], [' lang="en"'])
LOOSE = mostly(["", "\n  ", "<!-- c -->", "<?pi x?>"], [" stray "])
TAGS = mostly(["task", "input", "result", "config", "output"], ["thought"])


def _attr(name: str, value: str | None) -> str:
    return "" if value is None else f' {name}="{value}"'


@st.composite
def agent_xml(draw: st.DrawFn) -> str:
    attrs = (
        _attr("id", draw(IDS))
        + _attr("name", draw(NAMES))
        + _attr("depends", draw(DEPENDS))
        + _attr("status", draw(STATUS))
        + draw(mostly([""], [' dependsOn="1"', ' xml:space="preserve"']))
    )
    parts = []
    tags = draw(st.lists(TAGS, max_size=4, unique=True))
    if "task" not in tags and draw(mostly([True], [False])):
        tags.insert(draw(st.integers(0, len(tags))), "task")
    if tags and draw(mostly([False], [True])):
        tags.append(tags[0])  # a part said twice
    for tag in tags:
        space = draw(SPACE)
        if tag == "config":
            body = draw(CONFIGS)
        elif tag == "output":
            body = draw(OUTPUTS)
            space += draw(st.sampled_from(["", "", "", ' schema="missing.json"']))
        else:
            body = draw(TEXTS)
        parts.append(draw(LOOSE) + f"<{tag}{space}>{body}</{tag}>")
    return f"<agent{attrs}>" + "".join(parts) + draw(LOOSE) + "</agent>"


@st.composite
def plan_xml(draw: st.DrawFn) -> str:
    attrs = (
        _attr("name", draw(mostly(["plan", "", None], ["\x01"])))
        + _attr("taskId", draw(st.sampled_from(["t-1", "t-2"])))
        + _attr("modified", draw(mostly([None, "true", "false"], ["yes"])))
        + _attr("budget", draw(mostly([None, "tokens=1000"], ["tokens=0", "bogus=1"])))
        + draw(mostly([""], [' other="1"']))
    )
    children = []
    for kind in draw(
        st.lists(
            mostly(["agent", "agent", "agent", "taskPrompt", "variables"], ["role", "unknown"]),
            max_size=6,
        )
    ):
        if kind == "agent":
            child = draw(agent_xml())
        elif kind == "taskPrompt":
            child = f"<taskPrompt{draw(SPACE)}>{draw(TEXTS)}</taskPrompt>"
        elif kind == "variables":
            names = draw(st.lists(mostly(["topic", "n", "m"], ["", "9x"]), max_size=3, unique=True))
            if names and draw(mostly([False], [True])):
                names.append(names[0])  # declared twice
            inner = "".join(
                draw(LOOSE)
                + f"<variable{_attr('name', n or None)}{draw(SPACE)}>{draw(TEXTS)}</variable>"
                for n in names
            )
            extra = draw(mostly([""], [' a="1"']))
            child = f"<variables{extra}>{inner}{draw(LOOSE)}</variables>"
        elif kind == "role":
            child = (
                '<role name="reviewer" tools="file_read"><systemPrompt>Check.</systemPrompt></role>'
            )
        else:
            child = "<thought>hm</thought>"
        children.append(draw(LOOSE) + child)
    if not any(child.lstrip().startswith("<agent") for child in children) and draw(
        mostly([True], [False])
    ):
        children.append(draw(agent_xml()))
    return f"<workflow{attrs}>" + "".join(children) + draw(LOOSE) + "</workflow>"


def _read_closely(data: bytes) -> Workflow | WorkflowXMLError:
    source = data.decode()
    try:
        parser, plain = _parser_for(data, source, None)
        assert plain
        return Reader(_parse_tree(data, source, parser), source).read().workflow
    except WorkflowXMLError as e:
        return e


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan_xml())
def test_the_plain_path_reads_what_the_reader_reads_or_leaves_it(text: str) -> None:
    data = text.encode()
    plain = read_plain(data, _PLAIN_OPTIONS)
    closely = _read_closely(data)
    if plain is None:
        return  # the Reader's alone: always allowed
    try:
        quickly = Workflow.model_validate(plain)
    except ValidationError:
        # parse_workflow hands these to the Reader too; it must refuse them as well
        assert isinstance(closely, WorkflowXMLError), text
        return
    assert isinstance(closely, Workflow), (text, closely)
    assert quickly == closely, text


# What a plan can hold: XML 1.0's characters (no controls but tab, newline, return).
PLAN_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufffe\uffff").filter(
        lambda c: c >= " " or c in "\t\n\r"
    )
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.builds(
            WorkflowAgent,
            id=st.sampled_from(["1", "2", "3", "4"]),
            name=st.sampled_from(["llm", "shell"]),
            task=PLAN_TEXT.filter(lambda t: t.strip()),
            input=st.none() | PLAN_TEXT,
            config=st.none() | st.just({"tool": "shell", "command": "ls"}),
            status=st.sampled_from(["init", "done"]),
            result=st.none() | PLAN_TEXT,
        ),
        min_size=1,
        max_size=4,
        unique_by=lambda a: a.id,
    ),
    st.dictionaries(st.sampled_from(["topic", "n"]), PLAN_TEXT, max_size=2),
)
def test_plans_the_product_writes_take_the_plain_path(
    agents: list[WorkflowAgent], variables: dict[str, str]
) -> None:
    workflow = Workflow(name="p", task_id="t", agents=agents, variables=variables)
    data = workflow_to_xml(workflow).encode()
    plain = read_plain(data, _PLAIN_OPTIONS)
    assert plain is not None, data
    assert Workflow.model_validate(plain) == workflow == parse_workflow(data)


@pytest.mark.parametrize(
    "text",
    [
        # A DTD after a UTF-16 BOM: the DTD check cannot see it in the text, so the strict
        # parser (entities off) reads it and the DOCTYPE is refused, never expanded.
        '<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE w [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n'
        '<workflow name="x"><agent name="llm" id="1"><task>&b;</task></agent></workflow>',
    ],
)
def test_a_doctype_the_prolog_check_cannot_see_is_still_refused(text: str) -> None:
    with pytest.raises(WorkflowXMLError, match="DOCTYPE"):
        parse_workflow(text.encode("utf-16"))


def test_a_plan_read_on_the_plain_path_still_knows_where_its_agents_stand() -> None:
    from xsky.plan.xml import parse_workflow_source

    text = (
        '<workflow name="m" taskId="t">\n  <agent name="llm" id="1"><task>a</task></agent>'
        '<agent name="llm" id="2"><task>b</task></agent>\n</workflow>'
    )
    parsed = parse_workflow_source(text)
    assert parsed.agent_position(0) == (2, 3)
    assert parsed.agent_position(1) == (
        2,
        text.splitlines()[1].index('<agent name="llm" id="2"') + 1,
    )
