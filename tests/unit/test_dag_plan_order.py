"""A plan whose every dependency names an agent written before it cannot hold a cycle: its
graph is not built or walked (issue 37, item 9: a 10,000-agent plan's parse + validate); a
dependency on a later agent still has the whole graph checked."""

from __future__ import annotations

import pytest

from xsky.plan import dag
from xsky.plan.models import Workflow, WorkflowAgent

KINDS = ["shell", "llm"]


def _plan(*deps: tuple[str, list[str]]) -> Workflow:
    agents = [WorkflowAgent(id=i, name="shell", task=f"t{i}", depends=d) for i, d in deps]
    return Workflow(name="w", task_id="t", agents=agents)


def test_a_plan_in_plan_order_is_not_walked_for_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    def walked(*_: object) -> bool:
        raise AssertionError("the graph was walked")

    monkeypatch.setattr(dag, "_has_cycle", walked)
    plan = _plan(("1", []), ("2", ["1"]), ("3", ["1", "2"]), ("1", ["3"]), ("4", ["4", "9"]))
    said = [p.message for p in dag.validate(plan, KINDS)]
    # (the duplicate id, the self-dependency and the unknown one are said; no cycle)
    assert len(said) == 3 and not any("cycle" in m for m in said), said


@pytest.mark.parametrize(
    "deps",
    [
        [("1", ["2"]), ("2", ["1"])],
        [("1", []), ("2", ["3"]), ("3", ["4"]), ("4", ["2"])],
        [("a", ["c"]), ("b", ["a"]), ("c", ["b"]), ("d", ["d"])],
    ],
)
def test_a_dependency_on_a_later_agent_still_finds_its_cycle(deps: list) -> None:
    said = [p.message for p in dag.validate(_plan(*deps), KINDS)]
    assert any(m.startswith("dependency cycle: ") for m in said), said


def test_a_later_dependency_without_a_cycle_is_valid() -> None:
    assert dag.validate(_plan(("1", ["2", "3"]), ("2", ["3"]), ("3", [])), KINDS) == []
