"""forEach made durable (xsky/plan/loops.py): lists split, plans expanded, the leader's part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_leader_core_rules import T0, Shell
from xsky.artifacts import ArtifactRef
from xsky.errors import WorkflowXMLError
from xsky.leader.commands import StartAgent
from xsky.leader.state import BoardPage
from xsky.leader.tasks import board_markdown
from xsky.plan import loops
from xsky.plan.dag import validate
from xsky.plan.models import Step, Workflow, WorkflowAgent
from xsky.plan.xml import parse_workflow, parse_workflow_source, workflow_to_xml
from xsky.runs import AgentOutcome


def plan(list_result_agent: str = "1", **for_each: str) -> Workflow:
    return Workflow(
        name="loop",
        task_id="loop",
        agents=[
            WorkflowAgent(id="1", name="llm", task="list the pages"),
            WorkflowAgent(
                id="2",
                name="shell",
                task="read page {{item_index}}: {{item}}",
                depends=["1"],
                config={"tool": "shell", "command": "echo {{item}}"},
                for_each=for_each.get("source", f"{{{{agent_{list_result_agent}_result}}}}"),
            ),
            WorkflowAgent(
                id="3", name="llm", task="sum up", depends=["2"], input="{{agent_2_result}}"
            ),
        ],
    )


# -- lists ---------------------------------------------------------------------------------------


def test_a_list_is_a_json_array_or_else_its_lines():
    assert loops.split_items('["a", "b c", 3, {"k": 1}]') == ["a", "b c", "3", '{"k": 1}']
    assert loops.split_items("  first\n\n second \nthird") == ["first", "second", "third"]
    assert loops.split_items("[not json\nsecond") == ["[not json", "second"]
    assert loops.split_items("") == [] and loops.split_items("[]") == []


def test_a_list_is_read_as_a_model_writes_one():
    fence = '```json\n["apple", "banana"]\n```'
    assert loops.split_items(fence) == ["apple", "banana"]
    assert loops.split_items("Here are the fruits:\n1. apple\n2. banana") == ["apple", "banana"]
    assert loops.split_items("- apple\n- banana\n\nThat is all.") == ["apple", "banana"]
    assert loops.split_items('"[\\"apple\\", \\"banana\\"]"') == ["apple", "banana"]
    assert loops.split_items('The links: ["https://a.example/1", "https://a.example/2"]') == [
        "https://a.example/1",
        "https://a.example/2",
    ]
    # prose with brackets is no array; a few marked lines among many are no list
    assert loops.split_items("see [1]\nand [2]") == ["see [1]", "and [2]"]
    lines = "one\ntwo\nthree\nfour\n- five"
    assert loops.split_items(lines) == ["one", "two", "three", "four", "- five"]
    # as the leader read them before v0.11.9 (a run that expanded a loop then replays so)
    assert loops.split_items_as_before_v0_11_9(fence) == [
        "```json",
        '["apple", "banana"]',
        "```",
    ]


def test_a_list_nested_deeper_than_json_is_read_is_no_list_never_a_stuck_leader():
    deep = "[" * 5000 + "]" * 5000
    assert loops.split_items(deep) == [deep]
    assert loops.split_items_as_before_v0_11_9(deep) == [deep]
    assert loops.split_items("[" * 1200) == ["[" * 1200]


def test_a_list_longer_than_the_limit_is_refused_with_the_fix():
    with pytest.raises(loops.LoopError, match="1,001 items, over the 1,000"):
        loops.items_from("\n".join(str(i) for i in range(1001)), "2")


@given(
    st.lists(st.text(min_size=1).filter(lambda t: t.strip() == t and "\n" not in t), max_size=20)
)
def test_any_list_of_strings_comes_back_as_it_was_written(items: list[str]):
    assert loops.split_items(json.dumps(items)) == items


def test_item_ids_name_their_loop_and_number():
    assert loops.item_of("2[3]") == ("2", 3) and loops.item_of("a.b[12]") == ("a.b", 12)
    assert loops.item_of("2") is None and loops.item_of("2[0]") is None


# -- the plan -----------------------------------------------------------------------------------


def test_expanding_inserts_an_agent_per_item_and_turns_the_loop_into_their_gathering():
    wf = loops.expand(plan(), "2", ["a", "b"])
    assert [a.id for a in wf.agents] == ["1", "2[1]", "2[2]", "2", "3"]
    first = wf.agent("2[1]")
    assert (first.item, first.depends, first.for_each) == ("a", ["1"], None)
    assert first.config == {
        "tool": "shell",
        "command": "echo {{item}}",
    }  # {{item}} kept: rendered safely
    gather = wf.agent("2")
    assert gather.depends == ["2[1]", "2[2]"] and gather.for_each is None
    assert gather.config == {
        "tool": "gather",
        "items": ["{{agent_2[1]_result}}", "{{agent_2[2]_result}}"],
    }
    assert wf.agent("3").depends == ["2"]  # its dependents still see one result
    assert validate(wf, ["llm", "shell"]) == []
    assert parse_workflow(workflow_to_xml(wf)) == wf  # a plan in progress writes and reads back


def test_an_item_that_its_agent_never_mentions_is_given_as_its_input():
    wf = plan()
    wf.agents[1] = wf.agents[1].model_copy(update={"task": "read the page", "config": None})
    expanded = loops.expand(wf, "2", ["https://a", "https://b"])
    assert expanded.agent("2[2]").input == "Item 2 of 2:\n{{item}}"


def test_a_loop_is_checked_like_the_rest_of_the_plan():
    assert validate(plan(), ["llm", "shell"]) == []
    assert parse_workflow(workflow_to_xml(plan())) == plan()
    # The list must come from an agent it depends on.
    wrong = plan("3")
    said = [p.message for p in validate(wrong, ["llm", "shell"])]
    assert any("does not depend on agent 3" in m or "cycle" in m for m in said), said
    # {{item}} belongs to a loop.
    no_loop = Workflow(
        name="x", task_id="x", agents=[WorkflowAgent(id="1", name="llm", task="say {{item}}")]
    )
    (problem,) = validate(no_loop, ["llm"])
    assert "{{item}} is the item of a forEach agent, and agent 1 has no forEach" in problem.message


def test_a_forEach_that_is_not_one_reference_is_refused_at_its_line():
    xml = """<workflow name="x" taskId="x">
  <agent name="llm" id="1"><task>list</task></agent>
  <agent name="llm" id="2" depends="1" forEach="agent_1_result"><task>do {{item}}</task></agent>
</workflow>"""
    with pytest.raises(WorkflowXMLError) as caught:
        parse_workflow(xml)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (3, 3)
    assert 'forEach="agent_1_result" must be one reference to a list' in problem.message


# -- the leader ----------------------------------------------------------------------------------


def complete(shell: Shell, agent_id: str, result: str | None, ref: bool = False) -> None:
    dispatch = shell.running.pop(agent_id)
    outcome = AgentOutcome(
        kind="completed",
        result=result,
        result_ref=ArtifactRef(
            uri=f"artifact:run-1/{agent_id}/r.txt", size=9, sha256="0" * 64, preview="…"
        )
        if ref
        else None,
    )
    shell.core.attempt_succeeded(agent_id, shell.core.tasks[agent_id], dispatch, outcome, shell.now)
    shell.core.attempt_ended(agent_id, dispatch)
    shell.loop()


def test_the_leader_runs_each_item_as_an_agent_at_most_max_parallel_at_once_then_gathers():
    shell = Shell(plan(), max_parallel=2)
    assert [c.agent_id for c in shell.loop()] == ["1"]  # type: ignore[union-attr]
    complete(shell, "1", '["alpha", "beta", "gamma"]')
    assert sorted(shell.running) == ["2[1]", "2[2]"]  # two at a time: the run's max_parallel
    history = shell.core.plans.state.history[-1]
    assert history.version == 2 and "forEach of 2: 3 item(s), 2[1]…2[3]" in history.reason
    rendered, _ = shell.core.inputs.render("2[2]")
    assert rendered.task == "read page 2: beta"
    assert rendered.config is not None and rendered.config["command"] == 'echo "${XSKY_V1}"'
    assert rendered.config["values"] == {"XSKY_V1": "beta"}  # data never pasted into the command
    complete(shell, "2[1]", "A")
    assert sorted(shell.running) == ["2[2]", "2[3]"]
    complete(shell, "2[3]", "C")
    assert "2" not in shell.running  # the gathering waits for every item
    complete(shell, "2[2]", "B")
    gathered, _ = shell.core.inputs.render("2")
    assert gathered.config == {"tool": "gather", "items": ["A", "B", "C"]}  # in order
    complete(shell, "2", '["A", "B", "C"]')
    assert list(shell.running) == ["3"]
    shown = {t.agent_id: t for t in shell.core.views.board_page(shell.now).tasks}
    assert {"2[1]", "2[2]", "2[3]"} <= set(shown)
    # each item's line says its item (three identical "read page {{item_index}}: {{item}}")
    assert [shown[f"2[{n}]"].subject for n in (1, 2, 3)] == [
        "read page 1: alpha",
        "read page 2: beta",
        "read page 3: gamma",
    ]
    # so also in the Web UI's board (its current details), drawn from the same state
    details = board_markdown(
        "loop", shell.core.board.state.tasks, shell.now, shown=shell.core.views.item_text()
    )
    assert "read page 2: beta" in details and "{{item" not in details
    # so also in the whole board a large run stores as it ends, which `status` then reads
    stored = BoardPage.model_validate_json(shell.core.views.whole_board(shell.now))
    assert [t.subject for t in stored.tasks if t.agent_id.startswith("2[")] == [
        "read page 1: alpha",
        "read page 2: beta",
        "read page 3: gamma",
    ]
    # as v0.11.10 stored it, for a history recorded then (its length decided its parts)
    before = BoardPage.model_validate_json(shell.core.views.whole_board(shell.now, False))
    assert {t.subject for t in before.tasks if t.agent_id.startswith("2[")} == {
        "read page {{item_index}}: {{item}}"
    }


def test_a_run_that_read_a_list_before_v0_11_9_reads_it_so_on_replay():
    asked: list[str] = []

    def before(patch_id: str) -> bool:  # a history recorded before the patch
        asked.append(patch_id)
        return False

    for patched, items in ((before, 3), (None, 2)):
        shell = Shell(plan())
        if patched is not None:
            shell.core.configure(coordinating=False, patched=patched)
        shell.loop()
        complete(shell, "1", '```json\n["alpha", "beta"]\n```')
        assert len([t for t in shell.core.tasks if t.startswith("2[")]) == items
    assert asked == ["loop-lists-read-as-written"]
    # a list both readings read alike asks nothing (no marker in the history)
    shell = Shell(plan())
    shell.core.configure(coordinating=False, patched=before)
    shell.loop()
    complete(shell, "1", '["alpha", "beta"]')
    assert asked == ["loop-lists-read-as-written"]


def test_a_raw_item_is_given_as_data_and_pasted_only_in_a_run_that_pasted_it_before():
    asked: list[str] = []

    def before(patch_id: str) -> bool:  # a history recorded before the patch
        asked.append(patch_id)
        return False

    for patched, expected in ((None, 'cat "${XSKY_V1}"'), (before, "cat a; echo x")):
        raw = plan()
        raw.agents[1].config = {"tool": "shell", "command": "cat {{raw:item}}"}
        shell = Shell(raw)
        if patched is not None:
            shell.core.configure(coordinating=False, patched=patched)
        shell.loop()
        complete(shell, "1", '["a; echo x"]')
        rendered, _ = shell.core.inputs.render("2[1]")
        assert rendered.config is not None and rendered.config["command"] == expected
    assert asked == ["raw-item-given-as-data"]
    # a command that names no {{raw:item}} asks nothing (no marker in the history)
    shell = Shell(plan())
    shell.core.configure(coordinating=False, patched=before)
    shell.loop()
    complete(shell, "1", '["a"]')
    shell.core.inputs.render("2[1]")
    assert asked == ["raw-item-given-as-data"]


def test_an_empty_list_gathers_nothing_at_once():
    shell = Shell(plan())
    shell.loop()
    complete(shell, "1", "[]")
    assert list(shell.running) == ["2"]
    gathered, _ = shell.core.inputs.render("2")
    assert gathered.config == {"tool": "gather", "items": []}


def test_a_list_kept_only_in_the_store_fails_the_loop_with_the_fix():
    shell = Shell(plan())
    shell.loop()
    complete(shell, "1", None, ref=True)
    task = shell.core.tasks["2"]
    assert task.stored == "failed" and task.error is not None
    assert (
        "over the 8,192-byte artifact threshold" in task.error
        and "XSKY_ARTIFACT_THRESHOLD" in task.error
    )
    assert not shell.running and shell.status("3") == "blocked"


def test_a_failed_item_blocks_the_gathering_and_the_rest_is_kept():
    shell = Shell(plan(), max_auto_replans=0)
    shell.loop()
    complete(shell, "1", "x\ny")
    dispatch = shell.running.pop("2[1]")
    from xsky.leader.commands import AttemptFailure

    shell.core.attempt_failed(
        "2[1]",
        shell.core.tasks["2[1]"],
        dispatch,
        AttemptFailure(message="boom", deterministic=True),
        shell.now,
    )
    shell.core.attempt_ended("2[1]", dispatch)
    shell.loop()
    complete(shell, "2[2]", "Y")
    assert shell.status("2[1]") == "failed" and shell.status("2[2]") == "completed"
    assert shell.status("2") == "blocked" and not isinstance(shell.loop(), StartAgent)


# -- Eko's forEach among an agent's steps -----------------------------------------------------------

EKO_FIXTURES = Path(__file__).parents[1] / "fixtures" / "eko"


def test_an_eko_forEach_becomes_a_list_agent_a_loop_and_the_steps_after():
    parsed = parse_workflow_source(
        (EKO_FIXTURES / "03-github-developers-output-forEach.xml").read_text()
    )
    wf, said = loops.lower(parsed.workflow)
    assert said == ["forEach of agent 0 made durable: 0.list → 0.each → 0"]
    listing, each, after = wf.agents
    assert [s.output for s in listing.steps][-1] == "developers" and "JSON array" in listing.task
    assert each.for_each == "{{agent_0.list_result}}" and each.depends == ["0.list"]
    assert [s.text for s in each.steps] == [
        "Visit developer's homepage",
        "Extract developer's location information",
    ]
    assert (
        after.id == "0"
        and after.depends == ["0.each"]
        and "{{agent_0.each_result}}" in (after.input or "")
    )
    assert validate(wf, ["browser"]) == []
    assert loops.lower(wf) == (wf, [])  # once is enough


def test_a_forEach_with_no_steps_after_is_the_agent_its_dependents_read():
    parsed = parse_workflow_source((EKO_FIXTURES / "01-boss-zhipin-forEach.xml").read_text())
    wf, said = loops.lower(parsed.workflow)
    assert [a.id for a in wf.agents] == ["0.list", "0"]
    assert wf.agent("0").for_each == "{{agent_0.list_result}}"


def test_a_list_another_agent_makes_or_a_variable_is_read_from_there():
    def agent(agent_id: str, steps: list[Step], depends: list[str] | None = None) -> WorkflowAgent:
        return WorkflowAgent(
            id=agent_id, name="llm", task=f"task {agent_id}", steps=steps, depends=depends or []
        )

    wf = Workflow(
        name="x",
        task_id="x",
        variables={"cities": '["Oslo", "Lima"]'},
        agents=[
            agent("a", [Step(text="find people", output="people")]),
            agent("b", [Step(kind="forEach", items="people", steps=[Step(text="greet")])], ["a"]),
            agent("c", [Step(kind="forEach", items="cities", steps=[Step(text="visit")])]),
            agent("d", [Step(kind="forEach", items="nowhere", steps=[Step(text="?")])]),
        ],
    )
    lowered, said = loops.lower(wf)
    assert lowered.agent("b").for_each == "{{agent_a_result}}" and lowered.agent("b").depends == [
        "a"
    ]
    assert lowered.agent("c").for_each == "{{cities}}"
    assert lowered.agent("d") == wf.agent("d")  # a list from nowhere stays an instruction
    assert len(said) == 2 and validate(lowered, ["llm"]) == []


def test_the_leader_makes_an_eko_forEach_durable_from_the_first_plan_on():
    parsed = parse_workflow_source((EKO_FIXTURES / "01-boss-zhipin-forEach.xml").read_text())
    shell = Shell(parsed.workflow)
    assert "forEach of agent 0 made durable: 0.list → 0" in shell.core.plans.state.history[0].reason
    assert [c.agent_id for c in shell.loop()] == ["0.list"]  # type: ignore[union-attr]
    complete(shell, "0.list", '["job A", "job B"]')
    assert sorted(shell.running) == ["0[1]", "0[2]"]


def test_a_steps_input_another_agent_outputs_is_that_agents_result_given_by_name():
    parsed = parse_workflow_source((EKO_FIXTURES / "02-ai-news-dependsOn-computer.xml").read_text())
    wf, said = loops.lower(parsed.workflow)
    sender = wf.agent("1")
    assert sender.input == "summaryInfo:\n{{agent_0_result}}" and sender.depends == ["0"]
    assert "agent 1 reads summaryInfo from the agents that output it" in said
    assert validate(wf, ["browser", "shell"]) == []
    assert loops.lower(wf) == (wf, [])  # a replan of the plan as it runs changes nothing


def test_a_named_value_from_an_agent_not_depended_on_adds_the_dependency():
    wf = Workflow(
        name="x",
        task_id="x",
        variables={"tone": "warm"},
        agents=[
            WorkflowAgent(
                id="a", name="llm", task="find", steps=[Step(text="find", output="facts")]
            ),
            WorkflowAgent(
                id="b",
                name="llm",
                task="write",
                steps=[Step(text="write", input="facts,tone")],
            ),
        ],
    )
    lowered, _ = loops.lower(wf)
    assert lowered.agent("b").depends == ["a"]
    assert lowered.agent("b").input == "facts:\n{{agent_a_result}}\n\ntone:\n{{tone}}"
    assert validate(lowered, ["llm"]) == []


def test_an_agent_reading_a_named_value_still_sees_what_it_depends_on_as_eko_shows_it():
    # Eko: 0 researches (output researchData), 1 drafts after it, 2 saves the draft with the
    # research — its step's input="researchData" must not hide 1's draft from it
    wf = Workflow(
        name="x",
        task_id="x",
        agents=[
            WorkflowAgent(
                id="0", name="llm", task="research", steps=[Step(text="r", output="researchData")]
            ),
            WorkflowAgent(id="1", name="llm", task="draft", depends=["0"]),
            WorkflowAgent(
                id="2",
                name="llm",
                task="save",
                depends=["1"],
                steps=[Step(text="save the draft and the research", input="researchData")],
            ),
        ],
    )
    asked: list[str] = []
    for answer in (True, False):  # the patch: a run from now, one from before v0.11.9
        shell = Shell(wf)
        shell.core.configure(
            coordinating=False, patched=lambda p, a=answer: asked.append(p) is None and a
        )
        shell.loop()
        complete(shell, "0", "RESEARCH-0")
        complete(shell, "1", "DRAFT-1")
        rendered, _ = shell.core.inputs.render("2")
        assert rendered.input is not None and "researchData:\nRESEARCH-0" in rendered.input
        assert ("DRAFT-1" in rendered.input) is answer
    assert asked == ["eko-inputs-keep-dependencies"] * 2
    # an agent whose input names each dependency asks nothing
    shell = Shell(wf)
    shell.core.configure(coordinating=False, patched=lambda p: asked.append(p) is None)
    shell.loop()
    complete(shell, "0", "R")
    shell.core.inputs.render("1")
    assert asked == ["eko-inputs-keep-dependencies"] * 2


def test_step_done_moves_forward_never_back_and_refuses_a_step_that_is_not_there():
    from xsky.plan.steps import step_reached

    steps = [Step(text="List the people"), Step(kind="forEach", items="people"), Step(text="Check")]
    done, shown, said = step_reached(steps, 0, {"step": 1, "note": "3 people"})
    assert (done, shown) == (1, "step 1 of 3 done: List the people — 3 people")
    assert said == "Step 1 of 3 recorded. Next: step 2: for each item of people"
    assert step_reached(steps, 2, {"step": 1})[0] == 2  # a late report does not go back
    assert step_reached(steps, 2, {"step": 3})[2].endswith(
        "All steps are done: give your final answer."
    )
    for wrong in ({"step": 0}, {"step": 4}, {"step": "2"}, {"step": True}, {}):
        assert step_reached(steps, 1, wrong) == (1, "", "ERROR: step must be a number from 1 to 3")


def test_an_eko_plan_given_a_value_for_a_name_its_steps_read_loops_over_it_durably():
    from xsky.plan.variables import check_names, with_step_values

    eko = """<root><name>Weather</name><agents>
      <agent name="Chat" id="0" dependsOn=""><task>Weather for each city</task>
        <nodes><forEach items="cities"><node>Read the weather of the city</node></forEach>
        <node>Make a table</node></nodes>
      </agent></agents></root>"""
    wf = parse_workflow_source(eko).workflow
    given = {"cities": '["Paris", "Oslo"]'}
    check_names(wf, given, {})  # an Eko plan cannot declare it: the name its loop reads is its
    lowered, said = loops.lower(with_step_values(wf, given))
    assert [a.id for a in lowered.agents] == ["0.each", "0"]
    assert lowered.agent("0.each").for_each == "{{cities}}"
    assert said == ["forEach of agent 0 made durable: 0.each → 0"]
    # a name no step reads is still a typo
    with pytest.raises(Exception, match="citeis: the plan has no such name"):
        check_names(wf, {"citeis": "[]"}, {})
    assert with_step_values(wf, {"other": "x"}) is wf


P06 = """<root><name>links</name><agents>
  <agent name="Chat" id="0" dependsOn=""><task>Find the article links</task>
    <nodes><node output="links">Extract the article links</node>
    <node>Summarize the front page in two lines</node></nodes></agent>
  <agent name="Chat" id="1" dependsOn="0"><task>Read every article</task>
    <nodes><forEach items="links"><node>Open the article</node></forEach></nodes></agent>
</agents></root>"""


def test_a_value_another_agent_loops_over_is_read_where_its_agent_writes_it():
    # Eko keeps "links" as written at its step; the agent's last answer is its summary
    wf = parse_workflow_source(P06).workflow
    asked: list[str] = []
    lowered, said = loops.lower(wf, lambda p: asked.append(p) is None)
    assert [a.id for a in lowered.agents] == ["0.links", "0", "1"]
    part, rest, reader = lowered.agents
    assert [s.output for s in part.steps] == ["links"] and "JSON array" in part.task
    assert rest.depends == ["0.links"] and rest.input == "links:\n{{agent_0.links_result}}"
    assert [s.text for s in rest.steps] == ["Summarize the front page in two lines"]
    assert reader.for_each == "{{agent_0.links_result}}"
    assert said[0] == '"links" of agent 0 read where it is written: 0.links → 0'
    assert validate(lowered, ["llm"]) == []
    assert loops.lower(lowered) == (lowered, [])  # the plan as it runs lowers to itself
    # a run that lowered it before v0.11.9 replays as then: the reader loops over 0's answer
    before, _ = loops.lower(wf, lambda p: asked.append(p) is None and False)
    assert [a.id for a in before.agents] == ["0", "1"]
    assert before.agent("1").for_each == "{{agent_0_result}}"
    assert asked == ["eko-outputs-read-where-written"] * 2
    # a value written at the agent's last step is its answer: nothing to split, nothing asked
    last = P06.replace("<node>Summarize the front page in two lines</node>", "")
    assert [a.id for a in loops.lower(parse_workflow_source(last).workflow)[0].agents] == [
        "0",
        "1",
    ]


def test_a_list_read_as_one_item_before_v0_11_9_replays_as_one_item_however_long_it_reads_now():
    # "Here they are: [1,001 items]" was one item (one line); now it reads as 1,001 — over the
    # limit. A history from before the patch must still expand one item, not fail the task.
    text = "Here they are: " + json.dumps([f"u{i}" for i in range(1001)])
    for answer, items in ((False, 1), (True, 0)):
        shell = Shell(plan())
        shell.core.configure(coordinating=False, patched=lambda p, a=answer: a)
        shell.loop()
        complete(shell, "1", text)
        made = [t for t in shell.core.tasks if t.startswith("2[")]
        assert len(made) == items
        if answer:  # the reading since: over the limit, the loop fails with the fix
            assert "1,001 items" in (shell.core.tasks["2"].error or "")


@pytest.mark.parametrize("name", ["article links", "文章链接", "links/urls", "x" * 80])
def test_a_value_split_off_under_any_name_gets_an_id_an_agent_may_have(name: str):
    eko = P06.replace('"links"', f'"{name}"')
    lowered, _ = loops.lower(parse_workflow_source(eko).workflow)
    Workflow.model_validate(lowered.model_dump())  # every id as a plan's ids must be
    assert parse_workflow_source(workflow_to_xml(lowered)).workflow.agents == lowered.agents


def test_a_replan_that_comes_before_configure_asks_the_patch_too():
    from xsky.leader.core import LeaderCore
    from xsky.runs import RunInput

    asked: list[str] = []
    core = LeaderCore(
        RunInput(workflow=plan()), "run-1", T0, lambda p: asked.append(p) is None and False
    )
    core.apply_plan(parse_workflow_source(P06).workflow, "a person's replan", T0)
    assert asked == ["eko-outputs-read-where-written"]
    assert "0.links" not in [a.id for a in core.plans.plan.agents]


def test_two_fields_of_one_result_are_two_values_and_one_in_a_run_that_shared_them():
    asked: list[str] = []

    def before(patch_id: str) -> bool:  # a history recorded before the patch
        asked.append(patch_id)
        return False

    def fields(command: str) -> Workflow:
        return Workflow(
            name="fields",
            task_id="fields",
            agents=[
                WorkflowAgent(id="1", name="llm", task="give json"),
                WorkflowAgent(
                    id="2",
                    name="shell",
                    task="use it",
                    depends=["1"],
                    config={"tool": "shell", "command": command},
                ),
            ],
        )

    two = "echo {{agent_1_result.a}} {{agent_1_result.b}}"
    for patched, values in ((None, {"XSKY_V1": "A", "XSKY_V2": "B"}), (before, {"XSKY_V1": "A"})):
        shell = Shell(fields(two))
        if patched is not None:
            shell.core.configure(coordinating=False, patched=patched)
        shell.loop()
        complete(shell, "1", '{"a": "A", "b": "B"}')
        rendered, _ = shell.core.inputs.render("2")
        assert rendered.config is not None and rendered.config["values"] == values
    assert asked == ["shell-values-by-field"]
    # a command that names one field of each result asks nothing (no marker in the history)
    shell = Shell(fields("echo {{agent_1_result.a}} {{agent_1_result.a}}"))
    shell.core.configure(coordinating=False, patched=before)
    shell.loop()
    complete(shell, "1", '{"a": "A", "b": "B"}')
    shell.core.inputs.render("2")
    assert asked == ["shell-values-by-field"]
