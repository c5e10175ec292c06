"""The plan as a graph: validation reports everything at once; orders, levels, paths, trees."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xsky.errors import WorkflowValidationError
from xsky.plan import dag
from xsky.plan.models import Workflow, WorkflowAgent

KNOWN = ("browser", "file", "llm", "shell")


def plan(*specs: tuple[str, str, str] | tuple[str, str]) -> Workflow:
    """specs: (id, depends-csv[, task])."""
    agents = []
    for spec in specs:
        agent_id, deps = spec[0], spec[1]
        task = spec[2] if len(spec) > 2 else f"task {agent_id}"
        agents.append(
            WorkflowAgent(
                id=agent_id, name="llm", task=task, depends=[d for d in deps.split(",") if d]
            )
        )
    return Workflow(name="p", task_id="t", agents=agents)


def messages(wf: Workflow, **kw) -> list[str]:
    return [p.message for p in dag.validate(wf, KNOWN, **kw)]


def test_a_valid_diamond_has_no_problems():
    assert messages(plan(("1", ""), ("2", "1"), ("3", "1"), ("4", "2,3"))) == []


def test_duplicate_ids_are_reported():
    msgs = messages(plan(("1", ""), ("1", "")))
    assert msgs == ["duplicate agent id '1' (also used by agent #1); give each agent its own id"]


def test_unknown_dependency_names_the_ids_that_exist():
    (msg,) = messages(plan(("1", ""), ("2", "7")))
    assert "depends on unknown agent '7'" in msg and "1, 2" in msg


@pytest.mark.parametrize(
    ("dep", "meant"),
    [
        ("T-1", "'1'"),
        ("t-1", "'1'"),
        ("T1", "'1'"),
        ("T-Search", "'search'"),
        ("t-search", "'search'"),
    ],
)
def test_a_dependency_written_as_a_task_id_names_the_agent_id_it_means(dep: str, meant: str):
    """walk11: `depends="T-1"` said only "unknown agent 'T-1'" — the board and every steering
    command call agent 1 T-1, so a person writes it so."""
    (msg,) = messages(plan(("1", ""), ("search", ""), ("2", f"1,{dep}")))
    assert msg.startswith(
        f"agent 2 depends on unknown agent {dep!r} (did you mean {meant}? {dep!r} is its task id: "
        "depends names agent ids); ids in this plan: 1, search, 2"
    ), msg


def test_a_task_id_of_no_agent_is_not_taken_for_one():
    (msg,) = messages(plan(("1", ""), ("2", "T-7")))
    assert "task id" not in msg and "depends on unknown agent 'T-7'" in msg
    (msg,) = messages(plan(("ab", ""), ("AB", ""), ("2", "t-Ab")))  # ab or AB: not guessed
    assert "task id" not in msg, msg


def test_self_dependency_is_reported():
    (msg,) = messages(plan(("1", "1")))
    assert msg.startswith("agent 1 depends on itself")


def test_cycle_message_names_the_cycle_path():
    (msg,) = messages(plan(("1", ""), ("2", "4"), ("4", "2")))
    assert "dependency cycle: 2 → 4 → 2" in msg


def test_longer_cycle_path_is_a_real_cycle():
    wf = plan(("a", "c"), ("b", "a"), ("c", "b"), ("d", "a"))
    (cycle,) = dag.find_cycles(wf.agents)
    assert cycle[0] == cycle[-1] == "a" and len(cycle) == 4
    by_id = {a.id: a for a in wf.agents}
    for here, nxt in pairwise(cycle):
        assert nxt in by_id[here].depends


def test_two_separate_cycles_are_both_reported():
    msgs = messages(plan(("1", "2"), ("2", "1"), ("3", "4"), ("4", "3")))
    assert len([m for m in msgs if "cycle" in m]) == 2


def test_unknown_agent_names_list_the_known_ones_and_a_near_one():
    wf = Workflow(name="p", task_id="t", agents=[WorkflowAgent(id="1", name="brwser", task="x")])
    (msg,) = messages(wf)
    assert msg == (
        "agent 1: unknown agent name 'brwser' (did you mean 'browser'?); "
        "known: browser, file, llm, shell"
    )


def test_an_agent_of_ones_own_is_told_how_to_define_its_role_but_not_a_planner():
    """An Eko plan names its author's own agents (``mock_agent``): no kind is near, so a
    person is told how to make one of that name, in settings or in a native plan; a planner's
    model is not (it is to use the names it was given)."""
    wf = Workflow(
        name="p", task_id="t", agents=[WorkflowAgent(id="1", name="mock_agent", task="x")]
    )
    (plain,) = messages(wf)
    assert plain == "agent 1: unknown agent name 'mock_agent'; known: browser, file, llm, shell"
    (msg,) = [p.message for p in dag.validate(wf, KNOWN, for_a_person=True)]
    assert msg.startswith(plain + "; to run an agent of your own")
    assert "define a role named 'mock_agent'" in msg
    assert '"roles" in .xsky/settings.json' in msg
    assert '<role name="mock_agent"' in msg
    # a custom name that merely shares letters with a kind is not called a typo of it
    mailer = Workflow(
        name="p", task_id="t", agents=[WorkflowAgent(id="1", name="Mailer", task="x")]
    )
    assert "did you mean" not in messages(mailer)[0]


def test_all_problems_are_reported_together():
    wf = plan(
        ("1", "1"),
        ("1", ""),
        ("2", "9"),
        ("3", "4"),
        ("4", "3"),
        ("5", "", "use {{agent_2_result}}"),
    )
    wf.agents[0].name = "nobody"
    msgs = messages(wf)
    assert len(msgs) == 6, msgs
    with pytest.raises(WorkflowValidationError) as info:
        dag.ensure_valid(wf, KNOWN)
    assert len(info.value.problems) == 6


def test_ready_set_follows_completed_dependencies_in_plan_order():
    wf = plan(("1", ""), ("2", "1"), ("3", ""), ("4", "2,3"))
    assert dag.ready(wf, completed=[]) == ["1", "3"]
    assert dag.ready(wf, completed=["1"], started=["3"]) == ["2"]
    assert dag.ready(wf, completed=["1", "2"]) == ["3"]
    assert dag.ready(wf, completed=["1", "2", "3"]) == ["4"]


def test_topological_order_keeps_plan_order_among_equals():
    wf = plan(("4", "2,3"), ("3", ""), ("2", "1"), ("1", ""))
    assert dag.topological_order(wf) == ["3", "1", "2", "4"]


def test_topological_order_on_a_cycle_raises_with_the_cycle():
    with pytest.raises(WorkflowValidationError, match="1 → 2 → 1"):
        dag.topological_order(plan(("1", "2"), ("2", "1")))


def test_levels_are_longest_path_depths():
    wf = plan(("1", ""), ("2", "1"), ("3", ""), ("4", "2,3"), ("5", "1"))
    assert dag.levels(wf) == [["1", "3"], ["2", "5"], ["4"]]


def test_critical_path_counts_agents_by_default_and_uses_weights():
    wf = plan(("1", ""), ("2", "1"), ("3", "1"), ("4", "2,3"))
    assert dag.critical_path(wf) == (3.0, ["1", "2", "4"])
    assert dag.critical_path(wf, {"1": 1, "2": 1, "3": 10, "4": 2}) == (13.0, ["1", "3", "4"])


def test_descendants_and_ancestors():
    wf = plan(("1", ""), ("2", "1"), ("3", "2"), ("4", ""))
    assert dag.descendants(wf, "1") == ["2", "3"]
    assert dag.ancestors(wf, "3") == {"1", "2"}


def test_build_agent_tree_puts_entry_agents_in_parallel():
    wf = plan(("1", ""), ("2", ""), ("3", "1,2"), ("4", "3"))
    tree = dag.build_agent_tree(wf.agents)
    assert tree.type == "parallel" and [n.agent.id for n in tree.agents] == ["1", "2"]
    assert tree.next_agent.type == "normal" and tree.next_agent.agent.id == "3"
    assert (
        tree.next_agent.next_agent.agent.id == "4" and tree.next_agent.next_agent.next_agent is None
    )
    assert "nextAgent" in tree.model_dump(by_alias=True)


def test_build_agent_tree_single_entry_is_normal():
    tree = dag.build_agent_tree(plan(("1", ""), ("2", "1")).agents)
    assert tree.type == "normal" and tree.agent.id == "1" and tree.next_agent.agent.id == "2"


def test_build_agent_tree_refuses_a_plan_with_no_entry():
    with pytest.raises(WorkflowValidationError, match="cycle"):
        dag.build_agent_tree(plan(("1", "2"), ("2", "1")).agents)


def test_build_simple_agent_workflow_chains_depends_on_previous():
    wf = dag.build_simple_agent_workflow(
        "Search Task",
        [
            {"name": "browser", "task": "Go to google.com and search for 'XSky AI'"},
            {"name": "llm", "task": "Summarize the results", "dependsOnPrevious": True},
            {"name": "file", "task": "Save", "dependsOnPrevious": False},
        ],
    )
    assert [(a.id, a.depends) for a in wf.agents] == [("1", []), ("2", ["1"]), ("3", [])]
    assert wf.task_id and dag.validate(wf, KNOWN) == []


@st.composite
def random_dags(draw):
    n = draw(st.integers(1, 25))
    specs = []
    for i in range(n):
        deps = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        specs.append((str(i), ",".join(str(d) for d in deps)))
    perm = draw(st.permutations(range(n)))
    return plan(*[specs[p] for p in perm])


@settings(max_examples=200, deadline=None)
@given(random_dags())
def test_orders_and_levels_respect_every_dependency(wf):
    order = dag.topological_order(wf)
    pos = {a: i for i, a in enumerate(order)}
    lvl = {a: i for i, level in enumerate(dag.levels(wf)) for a in level}
    for a in wf.agents:
        for d in a.depends:
            assert pos[d] < pos[a.id] and lvl[d] < lvl[a.id]
    length, path = dag.critical_path(wf)
    assert length == len(dag.levels(wf)) == len(path)
    assert dag.validate(wf, KNOWN) == []
