"""Results along `depends`: which agents get them, how they are bounded, how stored ones go."""

from __future__ import annotations

from activities.artifacts import ArtifactStore
from xsky.artifacts import ArtifactRef
from xsky.leader.dep_context import MIN_EACH, PER_DEPENDENCY, dependency_context, wants_context
from xsky.leader.tasks import TaskState
from xsky.plan.models import WorkflowAgent


def agent(
    agent_id: str,
    name: str = "llm",
    task: str = "Summarize the results",
    depends: list[str] | None = None,
    **extra: object,
) -> WorkflowAgent:
    return WorkflowAgent(id=agent_id, name=name, task=task, depends=depends or [], **extra)


def done(agent_id: str, result: str | None = None, ref: ArtifactRef | None = None) -> TaskState:
    return TaskState(
        id=f"T-{agent_id}",
        agent_id=agent_id,
        session_id="run",
        subject=f"step {agent_id}",
        description=f"step {agent_id}",  # as the board makes it: the agent's task
        assigned_agent="shell",
        stored="completed",
        result=result,
        result_ref=ref,
    )


def test_only_model_driven_agents_with_dependencies_and_no_input_of_their_own_want_context():
    assert wants_context(agent("3", depends=["1"]))
    assert wants_context(agent("3", name="researcher", depends=["1"]))  # a role
    assert not wants_context(agent("3"))  # nothing to give
    assert not wants_context(agent("3", depends=["1"], input="{{agent_1_result}}"))
    assert not wants_context(
        agent("3", depends=["1"], task="Compare {{ agent_1_result }} with the list")
    )
    assert not wants_context(
        agent("3", name="shell", depends=["1"], config={"tool": "shell", "command": "ls"})
    )
    assert wants_context(agent("3", depends=["1"], config={"tool": "llm"}))


def test_each_result_is_bounded_and_many_dependencies_share_the_budget():
    deps = [str(i) for i in range(1, 41)]
    agents = {d: agent(d, name="shell", task=f"step {d}") for d in deps}
    tasks = {d: done(d, result=f"<{d}>" + "x" * 9000) for d in deps}
    issued: list[str] = []
    text = dependency_context(agent("99", depends=deps), agents, tasks, issued)
    assert text is not None and text.startswith("Results of the steps this task depends on:")
    assert all(f"[T-{d} · shell · step {d}]\n<{d}>" in text for d in deps)
    assert text.count("more characters not shown") == 40 and issued == []
    assert len(text) < 40 * (MIN_EACH + 200) + 24_000
    one = dependency_context(agent("99", depends=["1"]), agents, tasks, [])
    assert one is not None and f"({9003 - PER_DEPENDENCY} more characters not shown)" in one


def test_a_stored_result_goes_by_a_head_marker_that_the_activity_expands_to_its_first_part(
    tmp_path,
):
    store = ArtifactStore(tmp_path)
    ref = store.put_text("run", "1", "result.txt", "line\n" * 5000)
    issued: list[str] = []
    text = dependency_context(
        agent("2", depends=["1"]),
        {"1": agent("1", name="shell")},
        {"1": done("1", ref=ref)},
        issued,
    )
    assert text is not None and issued == [ref.uri] and f"⟦{ref.uri}#head={PER_DEPENDENCY}⟧" in text
    expanded = store.expand_markers(text, issued)
    assert (
        expanded.count("line\n") == PER_DEPENDENCY // 5
        and f"({25000 - PER_DEPENDENCY} more characters in {ref.uri})" in expanded
    )
    assert store.expand_markers(text, []) == text  # a marker the leader did not issue stays literal
