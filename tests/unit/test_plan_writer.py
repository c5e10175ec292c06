"""workflow_to_xml writes plain agents as text; the document must be the one lxml writes.

A run writes its whole plan as its first workflow task (the plan's first version), so the
writer is fast for the agents most plans hold; every byte must still be lxml's: the length of
a large plan's XML decides how many parts the leader stores it in (commands a recorded history
replays), and people diff versions. The reference below is the writer as it was, all lxml.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from xsky.plan.models import Limits, Step, Workflow, WorkflowAgent
from xsky.plan.xml import _agent_element, _plan_head, parse_workflow, workflow_to_xml
from xsky.security.roles import RoleCapabilityModel


def lxml_writer(workflow: Workflow) -> str:
    """workflow_to_xml before plain agents were written as text: every element lxml's (the
    plan's head is built as the writer builds it; the agents are what this holds apart)."""
    root = _plan_head(workflow)
    for agent in workflow.agents:
        _agent_element(root, agent)
    etree.indent(root, space="  ")
    return etree.tostring(root, encoding="unicode")


# Texts with everything lxml escapes or keeps: entities, CR/LF/tab, edge space, indentation,
# non-ASCII, "]]>", quotes — and characters XML cannot carry (scrubbed in texts).
TEXT = st.one_of(
    st.sampled_from(
        [
            "Summarize the report",
            "  edges  ",
            "\n    indented\n      more\n    ",
            "a & b <c> \"d\" 'e' ]]>",
            "crlf\r\nline\ttab",
            "ünïcødé ✓ 𝄞",
            "{{agent_1_result}}",
            "bad \x00 \x1f \ufffe chars",
            "",
        ]
    ),
    st.text(min_size=0, max_size=30),
)
IDS = st.sampled_from(["1", "2", "x_y.z-1", "3[2]"])
# What only an unvalidated copy holds: lxml writes it, or refuses it (a ValueError)
ODD_VALUES = st.sampled_from(["", 'a"<b>&\n\t\r', "bad\x01", "\ud800", "ü 𝄞"])
CONFIG: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.just({"tool": "noop"}),
    st.just({"x": float("nan")}),  # json refuses it (allow_nan=False), after any bad attribute
    st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=6,
        ),
        max_size=4,
    ),
)


@st.composite
def agents(draw: st.DrawFn) -> WorkflowAgent:
    agent = WorkflowAgent(
        id=draw(IDS),
        name=draw(st.sampled_from(["llm", "shell", "browser", "my-role"])),
        task="task",
        depends=draw(st.lists(IDS, max_size=3)),
        status=draw(st.sampled_from(["init", "init", "done", "error"])),
    )
    # Set without validation, as the leader's copies are: any text, the writer's to handle.
    return agent.model_copy(
        update={
            "task": draw(TEXT),
            "input": draw(st.none() | TEXT),
            "config": draw(CONFIG),
            "for_each": draw(st.none() | st.sampled_from(["{{agent_1_result}}", 'a"<b>&\n'])),
            **draw(
                st.sampled_from([{}, {}, {}])
                | st.fixed_dictionaries(
                    {},
                    optional={
                        "name": ODD_VALUES,
                        "id": ODD_VALUES,
                        "depends": st.lists(ODD_VALUES, max_size=2),
                        "status": ODD_VALUES,
                    },
                )
            ),
            "item": draw(st.none() | TEXT),
            "result": draw(st.none() | TEXT),
            "steps": draw(st.sampled_from([[], [], [Step(text="first"), Step(text="b & <c>")]])),
        }
    )


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    wf = Workflow(name="plan", task_id="t-1")
    return wf.model_copy(
        update={
            "name": draw(st.sampled_from(["plan", 'a "quoted" & <odd>\nname'])),
            "modified": draw(st.booleans()),
            "budget": draw(st.sampled_from([None, Limits(tokens=1000, usd=2.5)])),
            "task_prompt": draw(st.none() | TEXT),
            "variables": draw(st.sampled_from([{}, {"topic": "x & y", "n": "  3\n"}])),
            "roles": draw(
                st.sampled_from(
                    [[], [RoleCapabilityModel(name="my-role", description="d", system_prompt="s")]]
                )
            ),
            "agents": draw(st.lists(agents(), max_size=6)),
        }
    )


def written(write: Any, wf: Workflow) -> str | tuple[type[Exception], str]:
    try:
        return str(write(wf))
    except (ValueError, TypeError) as e:  # lxml refuses a value: the same refusal for both
        return type(e), str(e)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows())
def test_the_plan_is_written_as_lxml_writes_it(wf: Workflow) -> None:
    assert written(workflow_to_xml, wf) == written(lxml_writer, wf)


def test_a_plan_of_plain_agents_reads_back_the_same() -> None:
    wf = Workflow(
        name="round trip",
        task_id="t-2",
        agents=[
            WorkflowAgent(id="1", name="llm", task="  read & <sum>\n  it  ", input="x\ty"),
            WorkflowAgent(
                id="2",
                name="shell",
                task="count",
                depends=["1"],
                config={"tool": "shell", "command": 'echo "{{agent_1_result}}" > out'},
            ),
        ],
    )
    text = workflow_to_xml(wf)
    assert text == lxml_writer(wf)
    assert parse_workflow(text) == wf


def test_a_value_lxml_refuses_is_refused_as_before() -> None:
    bad = WorkflowAgent(id="1", name="llm", task="t").model_copy(update={"for_each": "a\x00b"})
    wf = Workflow(name="p", task_id="t", agents=[bad])
    with pytest.raises(ValueError):
        lxml_writer(wf)
    with pytest.raises(ValueError):
        workflow_to_xml(wf)


def test_config_json_is_written_as_json_dumps_writes_it() -> None:
    config = {"b": [1, 2.5, None, True], "ü": {"x": 'a"b\\c'}}
    wf = Workflow(
        name="p", task_id="t", agents=[WorkflowAgent(id="1", name="llm", task="t", config=config)]
    )
    assert json.dumps(config, ensure_ascii=False, allow_nan=False) in parse_workflow_text(wf)


def parse_workflow_text(wf: Workflow) -> str:
    return str(etree.fromstring(workflow_to_xml(wf).encode()).find("agent/config").text)


@pytest.mark.parametrize(
    "update",
    [
        {"depends": [""]},  # lxml writes depends=""
        {"depends": ["", ""]},
        {"name": ""},
        {"status": 'x"y'},
        {"name": "bad\x01", "config": {"x": float("nan")}},  # lxml's refusal comes first
        {"id": "\ud800", "config": {"x": float("inf")}},
    ],
)
def test_an_unvalidated_copy_is_written_or_refused_as_lxml_does(update: dict[str, Any]) -> None:
    agent = WorkflowAgent(id="1", name="llm", task="t").model_copy(update=update)
    wf = Workflow(name="p", task_id="t", agents=[agent])
    assert written(workflow_to_xml, wf) == written(lxml_writer, wf)
