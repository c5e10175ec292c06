"""`{{…}}` references: checked statically against dependencies and names, rendered purely."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xsky.errors import PlanError
from xsky.plan import dag
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.variables import (
    RenderError,
    fields_share_a_value,
    find_references,
    render,
    render_command,
    render_config,
)


def wf(*agents: WorkflowAgent, variables: dict[str, str] | None = None) -> Workflow:
    return Workflow(name="v", task_id="t", agents=list(agents), variables=variables or {})


def a(agent_id: str, task: str, depends: str = "", **kw) -> WorkflowAgent:
    return WorkflowAgent(
        id=agent_id, name="llm", task=task, depends=[d for d in depends.split(",") if d], **kw
    )


def problems(w: Workflow, **kw) -> list[str]:
    return [p.message for p in dag.validate(w, ["llm"], **kw)]


def test_finds_the_three_kinds():
    refs = find_references("{{agent_3_result}} {{ topic }} {{context.user_input}} {{ not a ref }}")
    assert [(r.kind, r.key) for r in refs] == [
        ("agent", "3"),
        ("variable", "topic"),
        ("context", "user_input"),
    ]


def test_a_direct_or_transitive_dependency_may_be_referenced():
    w = wf(a("1", "x"), a("2", "y", "1"), a("3", "{{agent_1_result}} and {{agent_2_result}}", "2"))
    assert problems(w) == []


def test_referencing_a_non_dependency_is_an_error():
    w = wf(a("1", "x"), a("2", "y"), a("3", "use {{agent_2_result}}", "1"))
    assert problems(w) == [
        "agent 3: {{agent_2_result}} is used but agent 3 does not depend on agent 2; add 2 to its depends"
    ]


def test_references_in_input_and_config_are_checked_too():
    w = wf(
        a("1", "x"), a("2", "y", input="{{agent_9_result}}", config={"cmd": ["{{agent_1_result}}"]})
    )
    msgs = problems(w)
    assert any("agent_9_result" in m and "names no agent" in m for m in msgs)
    assert any("agent_1_result" in m and "does not depend" in m for m in msgs)


def test_unknown_variable_lists_what_is_available():
    w = wf(a("1", "x"), a("2", "about {{topc}}", "1"), variables={"topic": "AI"})
    (msg,) = problems(w, variables=["lang"])
    assert (
        msg
        == "agent 2: unknown variable {{topc}} (did you mean 'topic'?); available: agent_1_result, "
        "lang, topic (declare it in <variables> or pass --var topc=…)"
    )


def test_a_misspelled_dependency_is_said_once_with_the_id_meant_and_never_listed_as_available():
    from xsky.plan.dag import validate

    w = wf(
        a("fetch", "x"),
        a("sum", "about {{tpoic}} {{agent_fetch_result}}", "fecth"),
        variables={"topic": "AI"},
    )
    said = [p.message for p in validate(w, ["llm"])]
    assert any("unknown agent 'fecth' (did you mean 'fetch'?)" in m for m in said), said
    assert not any("agent_fecth_result" in m for m in said), said  # not offered as available
    assert not any("does not depend on agent fetch" in m for m in said), said  # said once


def test_context_keys_are_checked_only_when_given():
    w = wf(a("1", "{{context.user}}"))
    assert problems(w) == []
    (msg,) = problems(w, context_keys=["lang"])
    assert "unknown context key {{context.user}}" in msg and "context.lang" in msg


def test_render_substitutes_results_variables_and_context():
    text = "R={{agent_1_result}} V={{ topic }} C={{context.user.name}} N={{context.n}} keep {{ two words }}"
    out = render(text, {"1": "done"}, {"topic": "AI"}, {"user": {"name": "Ada"}, "n": 3})
    assert out == "R=done V=AI C=Ada N=3 keep {{ two words }}"


def test_render_is_pure_and_repeatable():
    args = ("{{agent_1_result}}{{x}}", {"1": "a"}, {"x": "b"}, {})
    assert render(*args) == render(*args) == "ab"


def test_rendering_a_result_does_not_re_render_what_it_contains():
    assert render("{{agent_1_result}}", {"1": "{{x}}"}, {"x": "boom"}, {}) == "{{x}}"


def test_render_config_reaches_nested_strings():
    cfg = {"tool": "shell", "command": "echo {{agent_1_result}}", "env": [{"v": "{{x}}"}], "n": 1}
    assert render_config(cfg, {"1": "hi"}, {"x": "y"}, {}) == {
        "tool": "shell",
        "command": "echo hi",
        "env": [{"v": "y"}],
        "n": 1,
    }


def test_render_with_a_missing_value_raises_render_error():
    with pytest.raises(RenderError, match="agent 2 has not completed"):
        render("{{agent_2_result}}", {}, {}, {})
    with pytest.raises(RenderError, match="--var x="):
        render("{{x}}", {}, {}, {})
    with pytest.raises(RenderError, match="context"):
        render("{{context.k}}", {}, {}, {})


HOSTILE = "x'; touch pwned; echo \"$(id)\" `id` $HOME \\ end\nline2 '\"'"


@pytest.mark.parametrize(
    "template",
    [
        "echo {{v}}",
        'echo "{{v}}"',
        "echo '{{v}}'",
        'echo "a {{v}} b"',
        "echo 'a {{v}} b'",
        "printf %s {{v}}{{v}}",
        'echo "$(echo {{v}})"',
        "echo $'{{v}}'",
        "echo {{v}} # {{v}}",
    ],
)
def test_a_shell_command_never_holds_the_value_only_a_variable_naming_it(template, tmp_path):
    import subprocess

    command, values = render_command(template, {}, {"v": HOSTILE}, {})
    assert HOSTILE not in command and "pwned" not in command and values == {"XSKY_V1": HOSTILE}
    assert set(re.findall(r"XSKY_V\d+", command)) == {
        "XSKY_V1"
    }  # the same reference twice: one variable
    out = subprocess.run(
        ["bash", "-c", command],
        env={"PATH": "/usr/bin:/bin", **values},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert not (tmp_path / "pwned").exists()
    if template in ("echo {{v}}", 'echo "{{v}}"', "echo '{{v}}'"):
        assert out.stdout == HOSTILE + "\n"  # the value, byte for byte, in every quoting context


def test_raw_pastes_trusted_variables_only_and_agents_results_never():
    command, values = render_command(
        "ls {{raw:flags}} {{agent_1_result}}", {"1": "r"}, {"flags": "-la"}, {}
    )
    assert command == 'ls -la "${XSKY_V1}"' and values == {"XSKY_V1": "r"}
    with pytest.raises(RenderError, match="never pasted raw"):
        render_command("ls {{raw:agent_1_result}}", {"1": "r"}, {}, {})


def test_a_raw_item_is_given_as_data_and_refused_where_the_plan_is_read(tmp_path):
    """A forEach item is an item of an agent's result (or a watch's, a page's text): a list
    item "a.txt; echo INJECTED > pwned_item.txt" pasted by {{raw:item}} ran as a command of its
    own (a security review), though {{raw:agent_1_result}} was refused."""
    from xsky.plan.files import load_plan
    from xsky.plan.variables import pastes_raw_item

    item = {"item": "a.txt; echo INJECTED > pwned_item.txt", "item_index": "2"}
    command, values = render_command("cat {{raw:item}} # {{raw:item_index}}", {}, item, {})
    assert command == 'cat "${XSKY_V1}" # 2' and values == {"XSKY_V1": item["item"]}
    # a run that pasted it before v0.11.11 renders as it did (the leader asks its patch)
    pasted, _ = render_command("cat {{raw:item}}", {}, item, {}, raw_items=True)
    assert pasted == "cat a.txt; echo INJECTED > pwned_item.txt"
    assert pastes_raw_item("cat {{ raw:item }}") and not pastes_raw_item("cat {{item}} {{raw:x}}")
    plan = tmp_path / "p.xml"
    plan.write_text(
        '<workflow name="w"><agent name="shell" id="1"><task>list</task>'
        '<config>{"tool": "shell", "command": "ls"}</config></agent>'
        '<agent name="shell" id="2" depends="1" forEach="{{agent_1_result}}"><task>t</task>'
        '<config>{"tool": "shell", "command": "cat {{raw:item}}"}</config></agent></workflow>'
    )
    with pytest.raises(PlanError) as refused:
        load_plan(plan)
    assert "{{raw:item}}" in str(refused.value) and "write {{item}}" in str(refused.value)


def test_what_people_read_has_the_variables_values_and_nothing_else_rendered():
    from datetime import UTC, datetime

    from xsky.leader.core import LeaderCore
    from xsky.plan.variables import with_values
    from xsky.runs import RunInput

    said = with_values(
        "Release {{version}} after {{agent_1_result}} ({{ nope }})", {"version": "2.1"}
    )
    assert said == "Release 2.1 after {{agent_1_result}} ({{ nope }})"
    w = wf(a("1", "Build {{version}}"), a("2", "Summarize", "1"), variables={"version": "2.0"})
    core = LeaderCore(
        RunInput(workflow=w, variables={"version": "2.1"}), "run-1", datetime.now(UTC)
    )
    assert core.tasks["1"].subject == "Build 2.1" and core.tasks["1"].description == "Build 2.1"
    core.board.tasks["1"].stored, core.board.tasks["1"].result = "completed", "built"
    rendered, _ = core.inputs.render("2")
    assert (rendered.input or "").splitlines()[2] == "[T-1 · llm · Build 2.1]"


@given(
    st.lists(st.lists(st.integers(min_value=0, max_value=30), max_size=4), min_size=1, max_size=30),
    st.data(),
)
def test_remembered_dependence_is_the_walk_it_replaces(edges: list[list[int]], data) -> None:
    from xsky.plan.models import WorkflowAgent
    from xsky.plan.variables import _depends_on, reaches

    # agent i depends only on agents before it (a plan that passes the cycle check), and on
    # ids that are no agent of the plan
    agents = [
        WorkflowAgent(
            id=str(i),
            name="llm",
            task="t",
            depends=[str(d) for d in ds if d != i and (d < i or d >= len(edges))],
        )  # fmt: skip
        for i, ds in enumerate(edges)
    ]
    by_id = {a.id: a for a in agents}
    memo: dict[str, dict[str, bool]] = {}
    for _ in range(20):
        agent = data.draw(st.sampled_from(agents))
        target = str(data.draw(st.integers(min_value=0, max_value=len(edges))))
        assert _depends_on(agent, target, by_id, memo) == reaches(agent.depends, target, by_id)


def test_two_fields_of_one_result_in_a_command_are_two_values():
    # {{agent_1_result.title}} and {{agent_1_result.tags.1}} shared one shell variable, so the
    # command got the title twice (walk9: `echo T-T` for `echo {{….title}}-{{….tags.1}}`)
    result = {"1": json.dumps({"title": "T", "tags": ["a", "b"]})}
    code = "echo {{agent_1_result.title}}-{{agent_1_result.tags.1}} {{agent_1_result}} {{agent_1_result.title}}"
    command, values = render_command(code, result, {}, {})
    assert command == 'echo "${XSKY_V1}"-"${XSKY_V2}" "${XSKY_V3}" "${XSKY_V1}"'
    assert values == {"XSKY_V1": "T", "XSKY_V2": "b", "XSKY_V3": result["1"]}
    # as a run that rendered before v0.12.3 replays it: one variable per agent
    command, values = render_command(code, result, {}, {}, by_field=False)
    assert command == 'echo "${XSKY_V1}"-"${XSKY_V1}" "${XSKY_V1}" "${XSKY_V1}"'
    assert fields_share_a_value(code)
    assert not fields_share_a_value(
        "echo {{agent_1_result.a}} {{agent_2_result.b}} {{agent_1_result.a}}"
    )
